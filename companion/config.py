"""Settings: small frozen dataclasses, loaded once from settings.toml (settings_file.py) and
passed explicitly; where her files live (Paths), and what every mode starts from (RunConfig)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from companion.paths import (
    default_config_dir,
    default_data_dir,
    default_workspace,
)

SETTINGS_FILE = "settings.toml"
DEFAULT_BRAIN_URL = "http://127.0.0.1:11434/v1"
DEFAULT_MODEL = "qwen2.5:3b"


@dataclass(frozen=True)
class BrainSettings:
    base_url: str = DEFAULT_BRAIN_URL
    """Any OpenAI-compatible Chat Completions endpoint (a local Ollama by default)."""
    model: str = DEFAULT_MODEL
    api_key: str = ""
    """Empty: read COMPANION_API_KEY / OPENAI_API_KEY, then the keyring."""
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 60.0
    max_tokens_spoken: int = 300
    """Longest spoken reply, in tokens (about 200 words: a minute of speech)."""
    max_tokens_typed: int = 1200
    """Longest typed reply, in tokens."""
    temperature: float = 0.7
    top_p: float = 0.9
    context_tokens: int = 0
    """The server's context size to fit requests into; 0 asks the server (llama.cpp, Ollama)."""
    fill_while_speaking: bool = True
    """While the user still speaks, send their words so far ahead to a local server (never a
    hosted API) so its prompt cache holds them when the turn ends (companion/brain/fill.py)."""

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"brain.base_url must start with http:// or https:// (got {self.base_url!r})")
        if self.connect_timeout_s <= 0 or self.read_timeout_s <= 0:
            raise ValueError("brain timeouts must be positive")
        if not (16 <= self.max_tokens_spoken <= 32768 and 16 <= self.max_tokens_typed <= 32768):
            raise ValueError("brain reply limits must be between 16 and 32768 tokens")
        if not (0 <= self.temperature <= 2 and 0 < self.top_p <= 1):
            raise ValueError("brain.temperature must be 0-2 and brain.top_p above 0 and at most 1")
        if self.context_tokens < 0:
            raise ValueError("brain.context_tokens must be 0 (ask the server) or a positive size")


@dataclass(frozen=True)
class NarrationSettings:
    heartbeat_first_s: float = 9.0
    """Seconds a tool runs before her first heartbeat line."""
    heartbeat_every_s: float = 21.0
    """Seconds between later heartbeat lines."""

    def __post_init__(self) -> None:
        if self.heartbeat_first_s <= 0 or self.heartbeat_every_s <= 0:
            raise ValueError("narration timings must be positive")


@dataclass(frozen=True)
class ToolSettings:
    workspace: str = ""
    """The folder file and shell tools are jailed to; empty means ~/Companion."""
    disabled_toolsets: tuple[str, ...] = ()
    enabled_plugins: tuple[str, ...] = ()
    """Plugin families (`plugin:<name>`) the user switched on in Settings; a plugin found but
    not listed here is shown as off and never imported."""
    voice_budget_s: float = 20.0
    """How long one tool may work on a live voice turn."""
    text_budget_s: float = 60.0
    work_budget_s: float = 600.0
    web_allow_private: bool = False
    """Let web_extract fetch loopback and private-network addresses."""
    search_url: str = ""
    """A SearXNG-compatible search endpoint; empty switches web_search off."""
    run_without_sandbox: bool = False
    """Where the kernel sandbox (bubblewrap) can't run, offer shell and execute_code anyway."""

    def workspace_path(self) -> Path:
        return Path(self.workspace).expanduser() if self.workspace else default_workspace()


LOCAL = "local"
"""The engine setting for hearing or speaking on this computer."""


def is_remote(setting: str) -> bool:
    return setting.strip() != LOCAL


def check_address(setting: str, name: str) -> None:
    """Raise ValueError with a sentence unless `setting` is "local" or tcp://host:port."""
    if not is_remote(setting):
        return
    parsed = urlparse(setting.strip())
    try:
        port = parsed.port
    except ValueError:
        port = None
    if parsed.scheme != "tcp" or not parsed.hostname or port is None:
        example = "tcp://host:10300" if name == "hearing" else "tcp://host:10200"
        raise ValueError(f'voice.{name} must be "local" or a Wyoming server like {example} (got {setting!r})')


PACK_VOICE = "en_US-joe-medium"
"""The voice the installed offline pack carries (the shipped personalities name it)."""


@dataclass(frozen=True)
class VoiceSettings:
    input_device: str = ""
    """Empty means the system default microphone."""
    output_device: str = ""
    sound_backend: str = "auto"
    """How her sound reaches the devices: "auto" (the desktop's sound server when one answers,
    else PortAudio), "pulse" (straight to PulseAudio/PipeWire) or "portaudio" (through ALSA)."""
    hearing_model: str = ""
    """Her hearing engine and model: empty means the installed Whisper pack (tiny.en);
    "moonshine-base-en" means Moonshine from the installed moonshine-cpp wheel; otherwise a
    Whisper folder or model name (or a folder of Moonshine .ort files)."""
    voice: str = ""
    """A path to a piper .onnx or a voice name; empty means the installed offline pack."""
    hearing: str = "local"
    """Where she hears: "local" (Whisper on this computer) or a Wyoming server, tcp://host:10300."""
    speaking: str = "local"
    """Where her voice is made: "local" (piper on this computer) or a Wyoming server, tcp://host:10200."""
    speed: float = 1.0
    """How fast she talks (0.5 to 2.0); 1.0 lets her personality's `speed:` decide."""
    noise_scale: float = -1.0
    """How much piper varies her tone (0 flat to 1.5); negative: her personality's `variation:`, else the voice's own."""
    noise_w_scale: float = -1.0
    """How much piper varies her rhythm (0 to 1.5); negative, as for noise_scale."""
    pitch: float = 0.0
    """Semitones above her voice's own (-12 to 12, negative: lower); 0 lets her personality's `pitch:` decide."""
    barge_in: bool = True
    echo_cancellation: bool = True
    """Remove her own voice from the microphone, so she can be interrupted on open speakers
    (switch off for a headset or a speakerphone that cancels echo itself)."""
    noise_suppression: bool = False
    high_pass_filter: bool = True
    end_of_turn_silence_ms: int = 2000
    """How long she may wait while you think: a pause the turn model hears as unfinished ends
    the turn only after this much silence (without the turn model: 500 ms, or this if shorter)."""
    muted: bool = False
    """The microphone is off (the Mute button); unmuted, she listens in the `listening` mode."""
    listening: str = "called"
    """"called" (only her name, the wake word or push-to-talk, then a follow-up window: the
    default, so a TV or a call in the room starts nothing), "always" (every voice is hers to
    answer: a headset in a quiet room) or "only_me" (every utterance in a voice she knows, no
    call needed, everybody else ignored; needs know_voices); "muted" in a file means muted. See `mode`."""
    know_voices: str = "ask"
    """Knowing voices, the user's choice: "yes" (she learns the caller's voice from the calls and
    goes by it: the follow-up window, spoken answers to cards, being talked over), "no", or
    "ask" (not asked yet: off)."""
    wake_word: str = "okay_nabu"
    """A bundled microWakeWord model: okay_nabu, hey_jarvis, hey_mycroft or alexa."""
    name_wakes: bool = True
    """Her name (or an alias) as the first word calls her, as the wake word does."""
    follow_up_s: float = 8.0
    """After she answers, a turn starting within this many seconds needs no call."""
    called_cue: str = "none"
    """What she does the moment she is called: "none", "chime" or "yes" (she says "Yes?")."""
    thinking_line_s: float = 1.2
    """When no sentence of a spoken answer is ready this many seconds after you stop, she says
    a short line from her personality ("Hmm, let me think."), once; 0: never."""

    @property
    def mode(self) -> str:
        """The listening mode as Settings shows it: "muted", "always" or "called"."""
        return "muted" if self.muted else self.listening

    def with_mode(self, mode: str) -> VoiceSettings:
        """Muting keeps the mode to come back to; another mode unmutes."""
        if mode == "muted":
            return replace(self, muted=True)
        return replace(self, muted=False, listening=mode)

    def with_personality_voice(self, wanted: str, speed: float | None = None,
                               variation: tuple[float, float] | None = None,
                               pitch: float | None = None) -> VoiceSettings:
        """A personality's `voice:`, `speed:`, `variation:` and `pitch:` fill in where Settings has
        no choice of its own (no voice, speed 1.0, negative noise scales, pitch 0): Settings wins,
        it is the user's explicit choice. The pack's own voice is the installed one, already in use."""
        changes: dict[str, Any] = {}
        if not self.voice and wanted and wanted != PACK_VOICE:
            changes["voice"] = wanted
        if speed is not None and self.speed == 1.0:
            changes["speed"] = speed
        if pitch is not None and self.pitch == 0.0:
            changes["pitch"] = pitch
        if variation is not None:
            if self.noise_scale < 0:
                changes["noise_scale"] = variation[0]
            if self.noise_w_scale < 0:
                changes["noise_w_scale"] = variation[1]
        return replace(self, **changes) if changes else self

    @property
    def variation(self) -> tuple[float | None, float | None]:
        """piper's noise_scale and noise_w_scale, None where the voice's own is wanted."""
        return (None if self.noise_scale < 0 else self.noise_scale,
                None if self.noise_w_scale < 0 else self.noise_w_scale)

    def __post_init__(self) -> None:
        if self.listening == "muted":
            object.__setattr__(self, "muted", True)
            object.__setattr__(self, "listening", "called")
        if self.listening not in ("always", "called", "only_me"):
            raise ValueError('voice.listening must be "always", "called", "only_me" or "muted"')
        if self.know_voices not in ("ask", "yes", "no"):
            raise ValueError('voice.know_voices must be "ask", "yes" or "no"')
        if self.sound_backend not in ("auto", "pulse", "portaudio"):
            raise ValueError('voice.sound_backend must be "auto", "pulse" or "portaudio"')
        if self.wake_word not in ("okay_nabu", "hey_jarvis", "hey_mycroft", "alexa"):
            raise ValueError("voice.wake_word must be okay_nabu, hey_jarvis, hey_mycroft or alexa")
        if not 0 <= self.follow_up_s <= 60:
            raise ValueError("voice.follow_up_s must be between 0 and 60")
        if not 0 <= self.thinking_line_s <= 30:
            raise ValueError("voice.thinking_line_s must be between 0 and 30 (0: never)")
        if self.called_cue not in ("none", "chime", "yes"):
            raise ValueError('voice.called_cue must be "none", "chime" or "yes"')
        if not 0.5 <= self.speed <= 2.0:
            raise ValueError("voice.speed must be between 0.5 and 2.0")
        if not -12 <= self.pitch <= 12:
            raise ValueError("voice.pitch must be between -12 and 12 semitones")
        if self.noise_scale > 1.5 or self.noise_w_scale > 1.5:
            raise ValueError("voice.noise_scale and voice.noise_w_scale must be at most 1.5 (negative: the voice's own)")
        if not 100 <= self.end_of_turn_silence_ms <= 3000:
            raise ValueError("voice.end_of_turn_silence_ms must be between 100 and 3000")
        check_address(self.hearing, "hearing")
        check_address(self.speaking, "speaking")


@dataclass(frozen=True)
class UiSettings:
    always_on_top: bool = False
    push_to_talk_key: str = "F9"
    geometry: str = ""
    """Saved window geometry (base64 of Qt's saveGeometry)."""
    global_push_to_talk: bool = True
    """Push-to-talk works from any window (the desktop's shortcuts portal, or an X11 key grab)."""
    compact_shortcut: str = "Ctrl+Shift+F9"
    """Switches between the full window and the small face (in her window, and from any window
    where the desktop allows)."""
    compact: bool = False
    """She was the small always-on-top face when she quit (she comes back that way)."""
    compact_geometry: dict[str, str] = field(default_factory=dict)
    """Where the small face sits on each screen, by screen name ("x,y,width,height")."""
    start_at_login: bool = False
    """A launcher in the desktop's autostart folder (written by Settings and install-desktop)."""


_SERVER_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")


@dataclass(frozen=True)
class McpServerSettings:
    """One Model Context Protocol server; its tools form the family `mcp:<name>`."""

    name: str = ""
    """Lower-case letters, digits, `-` and `_`: the family is called `mcp:<name>`."""
    command: str = ""
    """The program of a stdio server (started in the sandbox, in the workspace)."""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment for a stdio server (nothing of the app's own environment is passed)."""
    url: str = ""
    """The address of a streamable-HTTP server instead of a command."""
    network: bool = False
    """A stdio server that needs the internet (otherwise its sandbox has no network)."""
    trusted: bool = False
    """Its tools run without asking; otherwise every call asks (its own read-only hints don't count)."""
    timeout_s: float = 30.0
    """How long one call (or starting the server) may take."""

    def __post_init__(self) -> None:
        where = f"mcp server {self.name!r}"
        if not self.name or not set(self.name) <= _SERVER_NAME_CHARS:
            raise ValueError(f"{where}: a name needs lower-case letters, digits, '-' or '_'")
        if bool(self.command) == bool(self.url):
            raise ValueError(f"{where}: give either a command (stdio) or a url (streamable HTTP)")
        if self.url and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"{where}: the url must start with http:// or https://")
        if self.timeout_s <= 0:
            raise ValueError(f"{where}: timeout_s must be positive")

    @property
    def family(self) -> str:
        return f"mcp:{self.name}"


@dataclass(frozen=True)
class McpSettings:
    servers: tuple[McpServerSettings, ...] = ()

    def __post_init__(self) -> None:
        names = [server.name for server in self.servers]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"mcp server {duplicates[0]!r} is declared twice")


@dataclass(frozen=True)
class Settings:
    brain: BrainSettings = field(default_factory=BrainSettings)
    narration: NarrationSettings = field(default_factory=NarrationSettings)
    tools: ToolSettings = field(default_factory=ToolSettings)
    voice: VoiceSettings = field(default_factory=VoiceSettings)
    ui: UiSettings = field(default_factory=UiSettings)
    mcp: McpSettings = field(default_factory=McpSettings)
    personality: str = ""
    """Path of the personality file; empty means personality.md in the config dir."""


@dataclass(frozen=True)
class Paths:
    """Where this run keeps its files (overridable with --config-dir for tests and profiles)."""

    config_dir: Path
    data_dir: Path

    @classmethod
    def default(cls, config_dir: Path | None = None) -> Paths:
        if config_dir is None:
            return cls(default_config_dir(), default_data_dir())
        # A custom config dir keeps everything together, so a test or profile is self-contained.
        return cls(Path(config_dir), Path(config_dir) / "data")

    @property
    def settings_file(self) -> Path:
        return self.config_dir / SETTINGS_FILE

    @property
    def personality_file(self) -> Path:
        return self.config_dir / "personality.md"

    @property
    def approvals_file(self) -> Path:
        return self.config_dir / "approvals.toml"

    @property
    def models_dir(self) -> Path:
        """Where downloaded hearing models and voices are kept."""
        return self.data_dir / "models"


def with_overrides(settings: Settings, **sections: dict[str, Any]) -> Settings:
    """A copy of `settings` with some fields of some sections replaced."""
    changes = {name: replace(getattr(settings, name), **values) for name, values in sections.items()}
    return replace(settings, **changes)


def keep_saved_where_untouched(edited: Settings, in_use: Settings, saved: Settings) -> Settings:
    """What to write to settings.toml: `edited`, except that a value this run took from the
    command line (where `in_use` differs from `saved`) and the user left alone keeps its saved
    value. One-run options (--brain-url, --model, --workspace, --personality) are never saved."""
    return _keep(edited, in_use, saved)


def _keep(edited: Any, in_use: Any, saved: Any) -> Any:
    if is_dataclass(edited) and type(edited) is type(in_use) is type(saved):
        return replace(edited, **{f.name: _keep(getattr(edited, f.name), getattr(in_use, f.name),
                                                getattr(saved, f.name)) for f in fields(edited)})
    return saved if edited == in_use and in_use != saved else edited


@dataclass(frozen=True)
class RunConfig:
    """What every mode starts from: where files live, the settings, and any notice (built by the
    command line, read by the core: the core never imports the command line)."""

    paths: Paths
    settings: Settings
    notice: str | None = None
    saved: Settings | None = None
    """The settings as in settings.toml, before one-run command-line options (None: `settings`).
    Whatever saves settings keeps these values for options the user did not change."""
