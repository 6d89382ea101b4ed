"""Tools from Model Context Protocol servers, as the work-only families `mcp:<server>`."""

from companion.mcp.connection import McpConnection, ServerState
from companion.mcp.manager import FamilyStatus, McpManager

__all__ = ["FamilyStatus", "McpConnection", "McpManager", "ServerState"]
