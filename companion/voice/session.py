"""One running voice session: the loop over parts built by voice.factory, her mouth, the narration cache."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

from companion.config import VoiceSettings
from companion.events import EventBus, NameHeard, NamesHeard, Speak, SpeechKind, UserHeard
from companion.paths import default_data_dir
from companion.supervisor import Watch
from companion.voice.addressing.addressed import CHIME_RATE, address_settings, chime
from companion.voice.addressing.heard import NameHearing
from companion.voice.addressing.learning import RELIABLE_SHARE, NameLearning
from companion.voice.brain_port import CompanionBrain
from companion.voice.factory import VoiceParts, make_vad
from companion.voice.fallback import RemoteHearing, RemoteVoice, server_lines
from companion.voice.hearing.stt import Transcriber
from companion.voice.hearing.vad import SpeechDetector
from companion.voice.loop import BrainPort, LoopSettings, VoiceLoop
from companion.voice.self_test import check_hearing, check_voice
from companion.voice.sound.audio import AudioSink, AudioSource
from companion.voice.sound.devices import DeviceSink, DeviceSource
from companion.voice.sound.echo_canceller import EchoSettings
from companion.voice.sound.echo_worker import EchoWorker
from companion.voice.sound.watch import SoundWatch
from companion.voice.speaker_check import SpeakerCheck, check_speakers
from companion.voice.speaking.narration_cache import NarrationCache
from companion.voice.speaking.resampled import ResampledVoice
from companion.voice.speaking.speaker import Speaker
from companion.voice.speaking.tts import Synthesizer
from companion.voice.turns.smart_turn import SmartTurn
from companion.voice.voiceprint import SpeakerEncoder, VoiceprintStore, Voices

log = logging.getLogger(__name__)

LISTENING_WATCH = Watch("my hearing", "hearing", restart_on=(Exception,))
"""The voice loop under a supervisor: a VAD, transcriber or device failure is said, and she
listens again (the microphone stays open; the utterance in progress is lost)."""


class VoiceSession:
    """One running voice loop over a source and a sink, talking to a brain.

    `brain` is a Companion (adapted) or anything with the BrainPort methods.
    """

    def __init__(
        self, *, brain: BrainPort | CompanionBrain, bus: EventBus, source: AudioSource, sink: AudioSink,
        transcriber: Transcriber, synthesizer: Synthesizer, voice: VoiceSettings,
        vad: SpeechDetector | None = None, turn_model: SmartTurn | None = None,
        echo: EchoWorker | None = None, microphone: AudioSource | None = None,
    ) -> None:
        """`microphone`: the device under `source` when a front-end wraps it (VoiceParts.microphone)."""
        self.brain = brain
        self.bus = bus
        self._enrolling = 0
        """Readings under way in Learn my voice… (enrolling): her ear is muted meanwhile."""
        self.source = source
        self.sink = sink
        self.synthesizer = synthesizer
        self.voice = voice
        self.echo = echo
        """The echo canceller the microphone hears through (None: no device microphone)."""
        self.turn_model = turn_model
        """Smart Turn, or None: then a fixed silence ends each turn."""
        self.notices: list[str] = []
        """What did not work, in sentences, for the front-end to show once her voice is up."""
        self.cache = NarrationCache(synthesizer)
        self.speaker = Speaker(synthesizer, sink, self.cache)
        self._rate = synthesizer.sample_rate
        """The rate her speaker, her cached lines and her echo reference run at (use_voice keeps it)."""
        self.loop = VoiceLoop(
            source=source, speaker=self.speaker, vad=vad or make_vad(), transcriber=transcriber,
            brain=brain, bus=bus, settings=self._loop_settings(voice),
            sink=sink, turn_model=turn_model,
        )
        self.loop.on_busy.append(self.cache.set_busy)
        self._paced: list = []
        """The devices that take a slower pace while she waits for a call (set_busy)."""
        for device in (sink, microphone or source):
            set_busy = getattr(device, "set_busy", None)
            if set_busy is not None:
                self._paced.append(set_busy)
                # Waiting for a call, her speaker and microphone wake less often (pulse_devices:
                # IDLE_AHEAD_S, IDLE_MICROPHONE_BUFFER).
                self.loop.on_busy.append(set_busy)
                set_busy(False)
        if isinstance(transcriber, RemoteHearing):
            self.loop.on_busy.append(transcriber.set_busy)  # her switch to her own hearing is said once quiet
        self.loop.calling.names = getattr(brain, "names", None)
        paths = getattr(getattr(brain, "companion", None), "paths", None)
        self.loop.calling.learning = NameLearning(
            transcriber, synthesizer, paths.data_dir / "heard-names.json" if paths is not None else None)
        """How her hearing writes her names, learned in the background (cached in her data folder)."""
        self.loop.calling.learning.on_heard.append(self._names_heard)
        self.loop.calling.wait_for_learning = not source.realtime
        if source.realtime:
            # Live, learning gives way to hearing the room; from a file the judge waits for it instead.
            ear = self.loop.ear
            self.loop.calling.learning.yield_to = lambda: ear.in_speech or ear.hearing_words or self.speaker.busy
        self.loop.calling.policy.apply(address_settings(voice))
        self.loop.calling.on_called.append(self._cue)
        self.sound = _sound_watch(bus, microphone or source, sink)
        """Watches the microphone and speaker for their sound server going away (None: no devices)."""
        if self.sound is not None:
            self.sound.on_lost.append(self._sound_lost)
        self._watching: asyncio.Task | None = None
        # Each turn re-reads the narration lines: a personality edit is synthesized in the
        # background before her next tool call (unchanged lines are kept).
        self._unsubscribe = bus.subscribe(self._on_event)
        # An engine that fell back at start (a Wyoming server not there) says so once, now that
        # her voice is up; its banner went out when it happened.
        for engine in (transcriber, synthesizer):
            take_notice = getattr(engine, "take_notice", None)
            notice = take_notice() if take_notice is not None else None
            if notice:
                bus.emit(Speak(SpeechKind.SAY, notice))

    def servers(self) -> list[str]:
        """What her Wyoming servers said about themselves (Settings → Voice); empty when all is local."""
        return server_lines(self.loop.transcriber, self.synthesizer)

    @classmethod
    def from_parts(cls, parts: VoiceParts, *, brain: BrainPort | CompanionBrain, bus: EventBus,
                   voice: VoiceSettings) -> VoiceSession:
        """A session on what `voice.factory.build_voice` assembled."""
        return cls(brain=brain, bus=bus, source=parts.source, sink=parts.sink, transcriber=parts.transcriber,
                   synthesizer=parts.synthesizer, voice=voice, vad=parts.vad, turn_model=parts.turn_model,
                   echo=parts.echo, microphone=parts.microphone)

    def _on_event(self, event) -> None:
        if isinstance(event, UserHeard):
            self.refresh_narration()

    def refresh_narration(self) -> None:
        lines = getattr(self.brain, "narration_lines", None)
        if lines is not None:
            try:
                self.cache.refresh(lines())
            except Exception:
                log.exception("could not list the narration lines")

    def apply(self, voice: VoiceSettings) -> None:
        """Mute, barge-in, echo cancellation, end-of-turn silence, speed, variation and pitch take effect now."""
        self.voice = voice
        if self.echo is not None:
            self.echo.configure(EchoSettings.from_voice(voice))
        self.loop.apply(self._loop_settings(voice))
        self._apply_calling(voice)
        synthesizer = self.synthesizer
        wanted = (voice.speed, voice.variation, voice.pitch)
        if wanted != tuple(getattr(synthesizer, name, value) for name, value in
                           zip(("speed", "variation", "pitch"), wanted, strict=True)):
            synthesizer.speed, synthesizer.variation, synthesizer.pitch = wanted
            self.refresh_narration()  # her cached lines were made at the old pace or pitch

    def use_voice(self, synthesizer: Synthesizer) -> None:
        """Speak with another voice (another personality's) from her next sentence on, without
        restarting her hearing: the microphone, Whisper, the echo canceller and the speaker stay.
        A voice at another rate is resampled to hers; its notice (Joe standing in) is said."""
        if synthesizer.sample_rate != self._rate:
            synthesizer = ResampledVoice(synthesizer, self._rate)
        self.synthesizer = synthesizer
        self.speaker.use_voice(synthesizer)
        self.cache.use_voice(synthesizer)
        self.loop.calling.learning.synthesizer = synthesizer
        self.refresh_narration()  # her tool lines, in the new voice
        take_notice = getattr(synthesizer, "take_notice", None)
        notice = take_notice() if take_notice is not None else None
        if notice:
            self.bus.emit(Speak(SpeechKind.SAY, notice))

    async def run(self) -> None:
        """Until the source ends (a file) or close() is called (devices)."""
        self.refresh_narration()
        self._apply_calling(self.voice)
        self.loop.calling.learn()
        if self.sound is not None and self._watching is None:
            self._watching = asyncio.get_running_loop().create_task(self.sound.run())
        await self.loop.run()

    def _sound_lost(self) -> None:
        """The sound server went away: words the user was saying were cut off, and are no
        question to answer once it is back, so the utterance under way is dropped (as a
        restarted ear would)."""
        self.loop.ear.drop_utterance()

    def _apply_calling(self, voice: VoiceSettings) -> None:
        calling = self.loop.calling
        calling.echo_cancelled = self.echo is not None and self.echo.cancelling
        calling.apply(address_settings(voice, calling.settings.names, calling.settings.heard), voice.wake_word)
        if voice.know_voices == "yes" and calling.voices is None:
            paths = getattr(getattr(self.brain, "companion", None), "paths", None)
            calling.voices = Voices(SpeakerEncoder(), VoiceprintStore(paths.data_dir if paths is not None
                                                                      else default_data_dir()))
            log.info("voice: %s", calling.voices.enrolment.state().sentence())
        elif voice.know_voices != "yes" and calling.voices is not None:
            calling.voices.close()
            calling.voices = None  # the user said no: nothing is embedded or learned from now on

    def _names_heard(self, hearings: tuple[NameHearing, ...]) -> None:
        """Her names are learned: the window hears how (Settings warns of one she may not wake to)."""
        self.bus.emit(NamesHeard(tuple(NameHeard(h.name, h.heard, h.caught, h.share >= RELIABLE_SHARE)
                                       for h in hearings if h.samples)))

    def _cue(self, how: str) -> None:
        """The moment the wake word or her name alone calls her: a chime or "Yes?" if chosen."""
        if how not in ("wake word", "bare-call") or self.speaker.busy:
            return
        if self.voice.called_cue == "yes":
            self.speaker.say("Yes?")
        elif self.voice.called_cue == "chime":
            asyncio.ensure_future(self.sink.play(chime(), CHIME_RATE))

    def _loop_settings(self, voice: VoiceSettings) -> LoopSettings:
        settings = LoopSettings.from_voice(voice, turn_model=self.turn_model is not None,
                                           echo_cancelled=self.echo is not None and self.echo.cancelling)
        return replace(settings, muted=True) if self._enrolling else settings

    def enrolling(self, reading: bool) -> None:
        """Learn my voice… began (True) or ended (False) a reading: while one is under way her ear
        is muted (frames read and thrown away, as with the user's own mute), so no sentence read
        to the dialog becomes a turn, even in *Always answer*, and she stops talking (her voice
        would be in the reading). The user's mute comes back when the last reading ends; a
        Settings change meanwhile keeps her muted."""
        was = self._enrolling
        self._enrolling = max(0, was + (1 if reading else -1))
        if bool(was) == bool(self._enrolling):
            return
        self.loop.enrolling = bool(self._enrolling)
        if self._enrolling:
            self.loop.interrupt("a voice is being learned")
            self.loop.ear.drop_utterance()
            log.info("voice: learning a voice from a reading: not listening for turns meanwhile")
        else:
            log.info("voice: the reading ended: listening again")
        self.loop.apply(self._loop_settings(self.voice))

    async def self_test(self) -> None:
        """After an engine switch: her ear hears a known word and her mouth says one (raises a
        CompanionError naming which failed)."""
        await check_hearing(self.loop.transcriber)
        await check_voice(self.synthesizer)

    async def check_speakers(self) -> SpeakerCheck | None:
        """"Test my speakers": she stops, plays her test line and measures its echo (not
        listening meanwhile, so she never takes it for the user). None without a device
        microphone and speaker."""
        if self.echo is None:
            return None
        self.loop.interrupt()
        listening = self.loop.settings
        self.loop.apply(replace(listening, muted=True))
        self._devices_busy(True)  # the check is her talking: the devices' waiting pace would skew it
        try:
            return await check_speakers(self.echo, self.sink, self.synthesizer)
        finally:
            self._devices_busy(False)
            self.loop.apply(replace(self.loop.settings, muted=listening.muted))

    def _devices_busy(self, busy: bool) -> None:
        for set_busy in self._paced:
            set_busy(busy)

    async def close(self) -> None:
        self._unsubscribe()
        if self.sound is not None:
            self.sound.close()
            if self._watching is not None:
                await asyncio.gather(self._watching, return_exceptions=True)
        try:
            await self.loop.close()
            await self.speaker.close()
            await self.cache.close()
            # A switch to her own engine begun by a request just dropped ends with her voice.
            for engine in (self.loop.transcriber, self.synthesizer):
                if isinstance(engine, RemoteHearing | RemoteVoice):
                    await engine.close()
            await self.sink.close()
        finally:
            if self.echo is not None:
                self.echo.close()


def _sound_watch(bus: EventBus, source: AudioSource, sink: AudioSink) -> SoundWatch | None:
    """A watch over whichever of the two is a sound device (files and Null devices need none)."""
    mic = source if isinstance(source, DeviceSource) else None
    speaker = sink if isinstance(sink, DeviceSink) else None
    return SoundWatch(bus, source=mic, sink=speaker) if mic is not None or speaker is not None else None
