"""Hearing and speaking on another machine: Wyoming servers, their addresses, and the
transcriber and synthesizer that talk to them. May use sound, hearing, speaking."""
