"""Reading what would run, before anyone is asked: a command line's words and options, what always
asks, what "Always" may remember, the workspace files it runs (pins), which invocations
the card understands fully (understood), git's settings, and a
static look at Python code. May use consent (text made visible) and jail."""
