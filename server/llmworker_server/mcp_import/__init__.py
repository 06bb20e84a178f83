"""MCP servers as providers: their tools imported into the registry and called over MCP
(``--mcp-server``, ``--mcp-servers``)."""
