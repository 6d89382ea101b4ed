"""Knowing voices: a speaker encoder, the voiceprints in her data folder, learning the user's
voice from the calls, and what a voice decides (voiceprint.decisions). Uses voice.models only."""

from companion.voice.voiceprint.decisions import KNOWN_THRESHOLD, PAIR_THRESHOLD, VoiceMatch, Voices
from companion.voice.voiceprint.encoder import SpeakerEncoder, resolve_encoder
from companion.voice.voiceprint.enrolment import Enrolment, EnrolmentState
from companion.voice.voiceprint.store import Voiceprint, VoiceprintStore

__all__ = [
    "KNOWN_THRESHOLD", "PAIR_THRESHOLD", "Enrolment", "EnrolmentState", "SpeakerEncoder", "VoiceMatch", "Voiceprint",
    "VoiceprintStore", "Voices", "resolve_encoder",
]
