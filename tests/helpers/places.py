"""Where the test house keeps things: the tests folder, its data and the repository root."""

from pathlib import Path

HELPERS = Path(__file__).resolve().parent
TESTS = HELPERS.parent
ROOT = TESTS.parent
FIXTURES = TESTS / "fixtures"
MCP_SERVERS = TESTS / "mcp_servers"
