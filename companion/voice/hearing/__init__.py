"""Hearing: voice activity detection and the recognisers that turn an utterance into words
(faster-whisper, Moonshine). May use voice.sound (frame format) and voice.models (its files,
checksums and downloads)."""
