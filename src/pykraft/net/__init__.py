"""asyncio TCP transport with Kafka framing: server, client connections, TLS. Nothing protocol-specific beyond framing and correlation ids."""
