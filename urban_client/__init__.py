"""Command-line client (`urban`) and MCP agent tools (`urban mcp`) over the Urban Conditions REST API."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("urban-conditions")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"
