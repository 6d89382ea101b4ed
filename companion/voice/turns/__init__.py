"""Turn-taking: the ear (frames to utterances), the endpointer, the turn model, the early
transcript and the prepared reply, and per-turn latency. May use sound, hearing, speaking, models."""
