"""The server's tool registry and its providers: the typestate registry, the ToolRegistry
service, provider tools, targets, health monitoring, provider mode and replica registration."""
