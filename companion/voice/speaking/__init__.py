"""Speaking: piper synthesis, the sentence splitter, the speech filter, the speaker queue,
the mouth and the narration cache. May use voice.sound and voice.models (its files, checksums
and downloads)."""
