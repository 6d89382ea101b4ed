"""Her ears and voice: audio in and out, VAD, Whisper, piper, and the voice loop (no Qt).

Start with `session.VoiceSession` (assembles everything) and `session.load_models`;
`loop.VoiceLoop` is the state machine, `speaker.Speaker` her mouth, `models` finds the models.
"""
