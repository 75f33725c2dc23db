"""How a node is configured: its properties file, Kafka's keys and checks, key stores."""
