"""Who she answers: the listening modes, her name, the wake word and the follow-up window.
May use voice.sound and voice.hearing; never the ear, the mouth or the session."""
