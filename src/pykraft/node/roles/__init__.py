"""The roles a node plays, assembled: a controller, a broker or both (combined), each from the hosts that own
its state and the API handlers that answer its requests. serve.py starts one."""
