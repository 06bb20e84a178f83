"""The MCP front end: the registry served to MCP clients (``--mcp-address``)."""
