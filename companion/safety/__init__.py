"""Safety, in layers, each using only those below it (pyproject's import-linter contract keeps it
so): `gate` (the one door every command and piece of code passes), `asking` (its question to the
user, one card at a time), `decision` (what it decides before anyone is asked) and `grants` (the
saved "Always" approvals) on top; `command_line` (reading what would run) and `sandbox` (the
process door and the kernel sandbox) below them; `consent` (the request and its answer), `jail`
(the file jail) and `network` at the bottom."""
