"""The MCP conformance fixture (see ``fixture_tools``)."""
