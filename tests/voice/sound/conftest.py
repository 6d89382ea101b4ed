"""The sound tests run on both of her sound paths: straight to the server and through PortAudio."""

from __future__ import annotations

import pytest
from audio_env import SOUND_BACKENDS


@pytest.fixture(params=SOUND_BACKENDS)
def sound_backend(request) -> str:
    """ "pulse" or "portaudio": the value of voice.sound_backend a test opens her devices with."""
    return request.param
