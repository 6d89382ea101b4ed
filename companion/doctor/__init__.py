"""`companion doctor`: check each thing she needs and say how to fix what is missing.

report.py holds what a check returns and prints the report; machine.py, voice.py and brain.py
hold the checks, grouped by what they look at, and speed.py times the brain once those pass.
This package may import anything of the core (it loads her models and probes the brain), never
the window.
"""

from __future__ import annotations

from companion.doctor.brain import check_brain, check_personality
from companion.doctor.machine import (
    check_landlock,
    check_log,
    check_packages,
    check_python,
    check_sandbox,
    check_sandbox_network,
    check_sandbox_user,
    check_settings,
    check_workspace,
)
from companion.doctor.report import Check, CheckFn
from companion.doctor.speed import check_brain_speed
from companion.doctor.voice import (
    check_audio_devices,
    check_echo_cancellation,
    check_listening_mode,
    check_models,
    check_personality_voices,
    check_portaudio,
    check_push_to_talk,
    check_turn_model,
    check_voice_servers,
    check_words_model,
)


def all_checks(config, *, include_brain: bool = True) -> list[CheckFn]:
    """Every check, in the order a person would fix things."""
    settings, paths = config.settings, config.paths
    checks: list[CheckFn] = [
        check_python,
        check_packages,
        check_portaudio,
        lambda: check_audio_devices(settings),
        lambda: check_echo_cancellation(settings),
        lambda: check_settings(paths),
        lambda: check_log(paths),
        lambda: check_workspace(settings),
        lambda: check_sandbox(settings),
        lambda: check_sandbox_user(settings),
        check_landlock,
        check_sandbox_network,
        lambda: check_personality(settings, paths),
        lambda: check_models(settings, paths),
        lambda: check_personality_voices(settings, paths),
        lambda: check_voice_servers(settings, paths),
        lambda: check_turn_model(settings),
        check_words_model,
        lambda: check_push_to_talk(settings),
        lambda: check_listening_mode(settings, paths),
    ]
    if include_brain:
        checks.append(lambda: _brain_and_speed(settings, paths))
    return checks


def _brain_and_speed(settings, paths) -> list[Check]:
    """The speed is timed only after the brain checks, so a brain that is down is told once."""
    found = check_brain(settings)
    return [*found, check_brain_speed(settings, paths, found)]
