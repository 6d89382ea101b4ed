"""Her ears and voice: audio in and out, VAD, Whisper, piper, and the voice loop (no Qt).

Start with `factory.build_voice` (assembles the engines and devices from VoiceSettings) and
`session.VoiceSession` (runs them);
`loop.VoiceLoop` is the state machine, `speaker.Speaker` her mouth, `models` finds the models.
"""
