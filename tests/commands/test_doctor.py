"""`companion doctor` reports each missing piece with a fix, and passes only when she can talk."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from scripted_brain import ScriptedBrain, recorded

from companion.config import Paths, Settings, with_overrides
from companion.doctor import brain as brain_checks
from companion.doctor import report as doctor_report
from companion.doctor import voice as voice_checks
from companion.settings_file import load_settings


def run_doctor(tmp_path: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "companion.cli", "doctor", "--config-dir", str(tmp_path / "config"),
         "--workspace", str(tmp_path / "work"), *extra],
        capture_output=True, text=True, env={**env, "NO_COLOR": "1"}, timeout=120,
    )


def test_doctor_passes_when_devices_models_and_brain_are_all_there(tmp_path, pulse_audio, scripted_brain):
    scripted_brain.push({"tool_calls": [{"name": "get_time", "arguments": {}}]})
    result = run_doctor(tmp_path, pulse_audio.client_env(), "--brain-url", scripted_brain.url)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "She can hold a spoken conversation." in result.stdout
    for name in ("Microphone", "Speaker", "Echo cancellation", "Hearing model", "Voice", "Turn model", "Words' turn model",
                 "Brain model", "Brain tools"):
        assert f"[ok  ] {name}:" in result.stdout
    assert "loaded in" in result.stdout
    assert "Echo cancellation: active: WebRTC AEC3 (livekit 1." in result.stdout
    # A fresh config listens When called, and the wake word's detector really scored audio.
    assert "[ok  ] Listening: When called: the wake word \u201cOkay Nabu\u201d" in result.stdout
    # the tool-support probe really reached the brain, with a tool offered
    assert any(body.get("tools") for body in scripted_brain.bodies)


def test_doctor_says_when_echo_cancellation_is_switched_off_and_what_that_means(tmp_path):
    config = tmp_path / "config"
    config.mkdir()
    (config / "settings.toml").write_text("[voice]\necho_cancellation = false\n")
    check = voice_checks.check_echo_cancellation(load_settings(Paths.default(config)).settings)
    assert not check.ok and not check.essential  # a warning: she still talks
    assert "off in the settings" in check.detail and "headset" in check.fix
    assert voice_checks.check_echo_cancellation(Settings()).ok


def test_doctor_reports_when_called_for_fresh_settings_and_always_answer_when_chosen():
    from companion.doctor.voice import check_listening

    called = check_listening(Settings(), ("Mira",))
    assert called.ok and called.detail.startswith("When called: the wake word \u201cOkay Nabu\u201d or her name (Mira)")
    always = check_listening(with_overrides(Settings(), voice={"listening": "always"}))
    assert always.ok and always.detail == "Always answer: she answers every voice she hears"


@pytest.fixture(scope="module")
def doctor_when_called_without_a_sound_device(tmp_path_factory) -> subprocess.CompletedProcess:
    """One `companion doctor` run, as a user runs it, with no sound server to reach and
    Settings in When called with the wake word "Hey Jarvis": the tests below each read their own
    lines of it (a full doctor run loads every model, ~8 s of processor)."""
    tmp_path = tmp_path_factory.mktemp("doctor")
    config = tmp_path / "config"
    config.mkdir()
    (config / "settings.toml").write_text('[voice]\nlistening = "called"\nwake_word = "hey_jarvis"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("PULSE_")}
    env["PULSE_SERVER"] = f"unix:{tmp_path / 'no-such-socket'}"
    with ScriptedBrain() as brain:
        return run_doctor(tmp_path, env, "--brain-url", brain.url)


def test_doctor_fails_with_a_fix_when_there_is_no_sound_device(doctor_when_called_without_a_sound_device):
    result = doctor_when_called_without_a_sound_device
    assert result.returncode == 1
    assert "[FAIL] Microphone: no input device found" in result.stdout
    assert "You can still type to her." in result.stdout
    assert "cannot hold a spoken conversation yet" in result.stdout


def test_doctor_reports_the_listening_mode_and_the_wake_word(doctor_when_called_without_a_sound_device):
    stdout = doctor_when_called_without_a_sound_device.stdout
    [line] = [line for line in stdout.splitlines() if "Listening:" in line]
    assert "When called" in line and "\u201cHey Jarvis\u201d" in line and "follow-up window 8 s" in line, line
    assert line.startswith("[ok")


def test_an_unreachable_brain_is_reported_with_what_to_start(unused_port):
    settings = with_overrides(Settings(), brain={"base_url": f"http://127.0.0.1:{unused_port}/v1"})
    [check] = brain_checks.check_brain(settings)
    assert not check.ok
    assert "Is the model server running at that address?" in check.detail
    assert "--brain-url" in check.fix


def test_an_unreachable_ollama_is_told_to_start_ollama():
    settings = with_overrides(Settings(), brain={"base_url": "http://127.0.0.1:11434/v1"})
    [check] = brain_checks.check_brain(settings)
    assert not check.ok and "Is Ollama running?" in check.detail and "ollama serve" in check.fix


def test_a_model_the_brain_lacks_is_reported_with_the_pull_command(scripted_brain):
    scripted_brain.show = {"model_info": {}, "parameters": "", "capabilities": ["completion"]}  # Ollama
    settings = with_overrides(Settings(), brain={"base_url": scripted_brain.url, "model": "tinyllama"})
    reachable, model = brain_checks.check_brain(settings)
    assert reachable.ok
    assert not model.ok
    assert "ollama pull tinyllama" in model.fix


def test_a_model_without_tool_support_is_reported(scripted_brain):
    scripted_brain.show = {"model_info": {}, "parameters": "", "capabilities": ["completion"]}  # Ollama
    scripted_brain.push({"error": "no_tools"})
    settings = with_overrides(Settings(), brain={"base_url": scripted_brain.url})
    _, model, tools = brain_checks.check_brain(settings)
    assert model.ok and not tools.ok and not tools.essential
    assert "tool-capable" in tools.fix


def test_the_tool_probe_fails_against_a_server_that_ignores_tools(tmp_path):
    # llama.cpp with a chat template that has no tool support drops `tools` without a word.
    props = {"default_generation_settings": {"n_ctx": 4096}, "chat_template_caps": {"supports_tools": False}}
    with ScriptedBrain([recorded("plain-reply-no-emotion-tag")], props=props) as brain:
        settings = with_overrides(Settings(), brain={"base_url": brain.url, "model": "scripted"})
        reachable, model, tools = brain_checks.check_brain(settings)
        [body] = brain.bodies
    assert reachable.ok and "llama.cpp" in reachable.detail and "4,096" in reachable.detail
    assert not tools.ok and not tools.essential
    assert "answered without calling the test tool (its chat template has no tool support)" in tools.detail
    assert "--jinja" in tools.fix
    # bounded: a tiny reply cap, the test tool offered
    assert body["max_tokens"] == brain_checks.PROBE_MAX_TOKENS and body["tools"][0]["function"]["name"] == "get_time"


def test_the_tool_probe_passes_with_a_structured_or_a_written_call(scripted_brain):
    scripted_brain.push({"tool_calls": [{"name": "get_time", "arguments": {}}]},
                        {"text": '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'})
    settings = with_overrides(Settings(), brain={"base_url": scripted_brain.url})
    assert brain_checks.check_brain(settings)[2].ok
    *_, written = brain_checks.check_brain(settings)
    assert written.ok and "as text" in written.detail


def test_personality_problems_are_listed_with_line_numbers(tmp_path):
    paths = Paths.default(tmp_path / "config")
    paths.config_dir.mkdir(parents=True)
    good = doctor_default_personality()
    broken = good.replace("## Quirks", "## Tool voice patterns\nget_time:\n  heartbeat: Not a list\n\n## Quirks", 1)
    paths.personality_file.write_text(broken, encoding="utf-8")
    check = brain_checks.check_personality(Settings(), paths)
    assert not check.ok
    assert "line" in check.detail.lower()
    assert not check.essential  # she keeps her last good personality and can still talk


def test_a_check_that_crashes_becomes_a_failed_line_not_a_traceback():
    def exploding() -> doctor_report.Check:
        raise RuntimeError("surprise")

    [check] = doctor_report.run_checks([exploding])
    assert not check.ok
    assert "surprise" in check.detail


def doctor_default_personality() -> str:
    from companion.persona.store import shipped_default

    return shipped_default().read_text(encoding="utf-8")


def test_doctor_reports_running_wyoming_servers_with_their_models_and_round_trips(
        tmp_path, wyoming_hearing, wyoming_voice):
    settings = with_overrides(Settings(), voice={"hearing": wyoming_hearing.uri, "speaking": wyoming_voice.uri})
    hearing, voice = voice_checks.check_voice_servers(settings, Paths.default(tmp_path))
    assert hearing.ok and voice.ok
    assert hearing.detail.startswith(f"{wyoming_hearing.uri} answers: faster-whisper ")
    assert voice.detail.startswith(f"{wyoming_voice.uri} answers: piper ")
    for check in (hearing, voice):
        assert re.search(r"test round trip \d+ ms$", check.detail)
    report = doctor_report.format_report([hearing, voice])
    assert f"[ok  ] Hearing server: {wyoming_hearing.uri} answers" in report


def test_doctor_reports_a_missing_wyoming_server_and_that_her_own_engine_stands_in(tmp_path, unused_port):
    uri = f"tcp://127.0.0.1:{unused_port}"
    settings = with_overrides(Settings(), voice={"speaking": uri})
    [voice] = voice_checks.check_voice_servers(settings, Paths.default(tmp_path))
    assert not voice.ok and not voice.essential  # the installed piper voice takes over
    assert voice.detail.startswith(f"I can't reach my voice server at {uri} (nothing answers there).")
    assert "python -m wyoming_piper --uri tcp://0.0.0.0:10200" in voice.detail
    report = doctor_report.format_report([voice])
    assert f"[warn] Voice server: I can't reach my voice server at {uri}" in report
    assert "fix: Until then she uses her own engine on this computer." in report
    assert "She can hold a spoken conversation." in report


def test_doctor_names_each_personalitys_voice_and_whether_it_is_installed(tmp_path, monkeypatch):
    import importlib.util

    from companion.voice.models import files

    paths = Paths.default(tmp_path / "config")
    checks = {check.name: check for check in voice_checks.check_personality_voices(Settings(), paths)}
    assert {name: (check.ok, check.detail) for name, check in checks.items()} == {
        "Voice of Mira": (True, "hibari/heart, speed 1, pitch +0 semitones: installed"),
        "Voice of Jeeves": (True, "en_US-joe-medium (installed pack), speed 0.9, pitch -2 semitones: installed"),
        "Voice of Pip": (True, "en_US-joe-medium (installed pack), speed 1.15, pitch +4 semitones: installed"),
    }
    real = importlib.util.find_spec
    monkeypatch.setattr(files.importlib.util, "find_spec",
                        lambda name, *args: None if name == files.HIBARI_PACK else real(name, *args))
    [mira] = [check for check in voice_checks.check_personality_voices(Settings(), paths)
              if check.name == "Voice of Mira"]
    assert not mira.ok and not mira.essential  # she still talks, in Joe's voice
    assert mira.detail == ("hibari/heart, speed 1, pitch +0 semitones: The voice hibari/heart isn't installed "
                           "(install it with: pip install hibari-tts==0.2.1). She speaks with Joe's voice until then.")
