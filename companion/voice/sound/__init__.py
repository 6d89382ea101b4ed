"""Her sound: the microphone and speaker streams, WAV sources and sinks, the echo canceller
and the thread it runs on, and the watch that reopens a device that went quiet.
Uses only the standard library, numpy and the sound libraries; nothing else of voice/."""
