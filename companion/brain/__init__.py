"""The brain: OpenAI-compatible client (client), turn loop (turn, toolcall), narration, reply cleaning (emotion), work mode (work).

Kept import-free so `companion.brain.emotion` stays light; import the modules you need.
"""
