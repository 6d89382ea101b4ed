"""Her ears and voice, without Qt. In layers, each using only those below it (pyproject's
import-linter contract keeps it so):

- `session` wires a voice session; `factory` builds the engines and devices from VoiceSettings,
  `loop` is the state machine (hear, answer, be interrupted), `brain_port` adapts the core.
- `whose_words`: whose words count (a card's spoken answer, a stranger's stop, Only me, the
  follow-up window), for the loop.
- `fallback` (her own engines standing in for a server) and `addressing` (who she answers).
- `turns` (the ear, the endpointer, barge-in, prepared replies), `remote` (Wyoming servers).
- `hearing` (VAD, Whisper, Moonshine) and `speaking` (piper, the mouth, the speaker queue).
- `sound` (streams, the echo canceller, the device watch) and `models` (model files, threads).
"""
