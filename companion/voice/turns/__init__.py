"""Turn-taking: the ear (frames to utterances), the endpointer, the turn model, the early
transcript and the prepared reply, barge-in, and per-turn latency. May use sound, hearing, speaking, models."""
