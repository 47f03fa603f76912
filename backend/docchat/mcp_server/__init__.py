"""The MCP server for agents and editors (`/mcp`): the user's documents as tools."""
