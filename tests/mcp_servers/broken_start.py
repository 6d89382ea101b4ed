"""An MCP server that fails at start, as real ones do: `exit` complains and quits (a missing
key), `hang` never answers the handshake, `garbage` answers with lines that are not JSON-RPC."""

from __future__ import annotations

import sys


def main() -> None:
    how = sys.argv[1] if len(sys.argv) > 1 else "exit"
    if how == "exit":
        sys.stderr.write("error: NOTES_API_KEY is not set\n")
        sys.exit(3)
    for _line in sys.stdin:  # hear the handshake...
        if how == "garbage":
            sys.stdout.write("Welcome to notes-server 2.0! <html>\n")
            sys.stdout.flush()
        # ...and (hang) never answer it.


if __name__ == "__main__":
    main()
