"""Command-line client (`urban`) and MCP agent tools (`urban mcp`) over the Urban Conditions REST API."""

__version__ = "0.1.0"
