"""Acoustic echo cancellation: WebRTC's audio processing module (AEC3) on the microphone path.

What the speaker plays (the far end) and what the microphone hears (the near end) arrive as
blocks stamped on one clock: the output block's DAC time and the input block's ADC time, as
PortAudio estimates them or, straight on the sound server (pulse_devices), exactly from the
server's own clock and the streams' indexes. Both become 16 kHz sample timelines (timeline.py), so every 10 ms microphone frame is
paired with the far-end audio that was leaving the speaker at the same moment, whatever the
two devices' buffer sizes. The module then only has to find the room's own delay (the air
between speaker and microphone, or a sound server's loopback), which AEC3 estimates itself.

EchoCanceller is single-threaded and does no I/O; echo_worker.EchoWorker runs it on a thread of its own.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

import numpy as np

from companion.config import VoiceSettings
from companion.voice.sound.frames import QUIET_RMS, SAMPLE_RATE
from companion.voice.sound.timeline import SETTLE_BLOCKS, Timeline

__all__ = ["APM_FRAME", "SETTLE_BLOCKS", "EchoCanceller", "EchoSettings", "EchoStats", "Timeline", "db"]

APM_FRAME = SAMPLE_RATE // 100
"""WebRTC's module takes exactly 10 ms frames."""
FAR_KEPT = SAMPLE_RATE * 2
"""Far-end audio kept ahead of the microphone (the speaker's buffer is rarely 2 s deep)."""
_INT16 = 32767.0
NO_ECHO_COUPLING = 1e-4
"""Microphone energy over speaker energy, while she speaks, below which the microphone hears
none of her (-40 dB: a headset, or hardware that cancels echo). AEC3 starts out assuming a
loud echo and, for its first seconds of her voice, suppresses everything the microphone hears,
so a user talking over her first reply on a headset went unheard. Below this coupling her
echo is 30 dB under the level that could count as talking over her, so the raw frame is safe."""
COUPLING_FRAMES = 300
"""The coupling compares the median energies of the microphone and the speaker over the last
3 s of frames in which she spoke: medians of the two, not frame by frame, so the room's delay
does not matter, and a user talking over her now and then does not move it."""
QUIET_TAIL_FRAMES = 50
"""Her echo dies away within 500 ms of her last sound (the room's delay and reverberation)."""
FAR_SILENT = 1e-8
"""Mean square of a far-end frame that is silence (-80 dBFS: the speaker idles on zeros)."""
NEAR_QUIET = QUIET_RMS ** 2
"""Mean square of a microphone frame of a quiet room (the VAD's quiet, -60 dBFS): nothing in it
to clean. Such a frame, 500 ms after she last made a sound, skips the module with its far end:
the module's streams stay in step, and listening to silence costs next to nothing."""
COUPLING_MIN_FRAMES = 100
SETTLED_FRAMES = 100
"""Frames of her voice (1 s) the module needs before its echo removal is trusted (EchoStats.settled):
AEC3 first suppresses all it hears, then lets through what its filter has not learned yet. On a
busy machine, with the speaker's stream moving after underruns in that first second, her first
line came back at 1-3 dB removed 0.9-1.0 s in and stopped her (2 of 5 replies, load 8-10).
A move of the speaker's stream starts the count again: the filter must find her echo anew."""
"""Until she has spoken for a second, the module's output is used (it may be a room whose
echo has not arrived yet)."""


@dataclass(frozen=True)
class EchoSettings:
    echo_cancellation: bool = True
    """Remove her own voice from the microphone (off for headsets and hardware echo cancellation)."""
    noise_suppression: bool = False
    """WebRTC's noise suppressor (steady fans and hum); off by default, as Whisper copes with noise."""
    high_pass_filter: bool = True
    """Remove rumble below ~80 Hz."""

    @property
    def active(self) -> bool:
        """True when any processing runs at all."""
        return self.echo_cancellation or self.noise_suppression or self.high_pass_filter

    @classmethod
    def from_voice(cls, voice: VoiceSettings) -> EchoSettings:
        return cls(echo_cancellation=voice.echo_cancellation, noise_suppression=voice.noise_suppression,
                   high_pass_filter=voice.high_pass_filter)


def audio_processing_module(settings: EchoSettings):
    """A new livekit.rtc.AudioProcessingModule with the chosen features (imported lazily:
    the native library loads only when echo cancellation is actually used)."""
    from livekit import rtc

    return rtc.AudioProcessingModule(
        echo_cancellation=settings.echo_cancellation, noise_suppression=settings.noise_suppression,
        high_pass_filter=settings.high_pass_filter,
    )


@dataclass
class EchoStats:
    """Running totals over processed 10 ms frames (energies are sums of squared samples)."""

    frames: int = 0
    quiet_frames: int = 0
    """Frames of a quiet room long after her last sound, passed on without the module."""
    busy_s: float = 0.0
    """CPU time spent pairing and inside the audio processing module (its thread's time)."""
    far_energy: float = 0.0
    raw_energy: float = 0.0
    clean_energy: float = 0.0
    echo_frames: int = 0
    """Frames during which she was audible (the far end above a whisper)."""
    lead_ms: int = 0
    """How far ahead of the microphone frame the speaker's audio had arrived, last frame."""
    xruns: int = 0
    """Blocks the speaker or the microphone flagged as an underflow or overflow (or a move to
    another device): the sound system stuttered (a busy machine), and the echo may be out of
    step for a moment (for a second or two with PortAudio's stamps)."""
    jumps: int = 0
    """Times the server's timing strayed by more than 20 ms with no xrun reported (timeline.py:
    counted, not followed: on a loaded machine the client's interpolated clock strays and comes back)."""
    settled: bool = True
    """Her echo is being removed as the module has learned it: false for the first SETTLED_FRAMES of
    her voice and again after the speaker's stream moved (a user's voice must then be louder than
    her echo could be to count as talking over her)."""

    @property
    def ms_per_frame(self) -> float:
        return 1000 * self.busy_s / self.frames if self.frames else 0.0


def db(ratio: float) -> float:
    """10·log10 of an energy ratio, floored at -100 dB."""
    return float(10 * np.log10(max(ratio, 1e-10)))


class EchoCanceller:
    """Pairs far-end and near-end audio by their PortAudio times and cleans the near end.

    render(): a block the speaker is about to play and its DAC time. capture(): a microphone
    block and its ADC time; returns the cleaned 16 kHz audio ready so far (10 ms frames, so up
    to 10 ms is held back until the next block).
    """

    FAR_ACTIVE = 1e-4
    """Mean square above which a far-end frame counts as her speaking (about -40 dBFS)."""

    def __init__(self, settings: EchoSettings | None = None) -> None:
        self.settings = settings or EchoSettings()
        self.stats = EchoStats()
        self._far = Timeline()
        self._near = Timeline()
        self._far_fed = 0  # 16 kHz index up to which far-end audio has gone into the module
        self._near_done = 0  # 16 kHz index up to which the microphone has been processed
        self._apm = audio_processing_module(self.settings) if self.settings.active else None
        self._frame_type = None
        self._spoken: deque[tuple[float, float]] = deque(maxlen=COUPLING_FRAMES)
        """(speaker, microphone) energy of recent frames in which she spoke."""
        self._hears_her: bool | None = None
        """hears_her, until _spoken changes."""
        self._far_silent_run = 0
        """Microphone frames since the far end last made a sound."""
        self._learned = 0
        """Frames of her voice since the far end's stream started or last moved (SETTLED_FRAMES)."""
        self._far_shape = (0, 0)
        """The far timeline's (runs, moves) when _learned was last counted."""

    def configure(self, settings: EchoSettings) -> None:
        """Switch features on or off; a new module starts (its echo model learns again in ~1 s)."""
        if settings != self.settings:
            self.settings = settings
            self._apm = audio_processing_module(settings) if settings.active else None

    def release(self) -> None:
        """Free the native parts (resamplers, the audio processing module): the canceller is done."""
        self._far.release()
        self._near.release()
        self._apm = None

    def render(self, block: np.ndarray, rate: int, dac_time: float, *, xrun: bool = False,
               exact: bool = False) -> None:
        self.stats.xruns += xrun
        self._far.push(block, rate, dac_time, xrun=xrun, exact=exact)
        self.stats.jumps = self._far.jumps + self._near.jumps
        # Keep only what can still be paired with a microphone frame.
        self._far.drop_before(max(self._far_fed, self._far.end - FAR_KEPT))

    def capture(self, block: np.ndarray, rate: int, adc_time: float, *, xrun: bool = False,
                exact: bool = False, wait_for_far: bool = False) -> np.ndarray:
        """The cleaned 16 kHz audio ready so far; with `wait_for_far`, frames whose far end has
        not arrived yet stay here (drain() cleans them later)."""
        self.stats.xruns += xrun
        self._near.push(block, rate, adc_time, xrun=xrun, exact=exact)
        self.stats.jumps = self._far.jumps + self._near.jumps
        if not self._near.start <= self._near_done <= self._near.end:
            self._near_done = self._near.start  # a new run, or the stream moved past what was done
        return self.drain(wait_for_far=wait_for_far)

    @property
    def waiting(self) -> bool:
        """A whole microphone frame is here, not yet cleaned."""
        return self._near.end - self._near_done >= APM_FRAME

    def far_arrived(self) -> bool:
        """The speaker's audio for the next microphone frame has arrived (or no speaker has played
        yet, or its stamps are on another clock: nothing to wait for)."""
        frame_at, far_end = self._near_done, self._far.end
        return not self._far.runs or far_end >= frame_at + APM_FRAME or far_end < frame_at - FAR_KEPT

    def drain(self, *, wait_for_far: bool = False) -> np.ndarray:
        """Clean the whole microphone frames here; with `wait_for_far`, only up to where the
        speaker's audio has arrived: a frame cleaned before its far end came pairs her voice with
        silence, and the far end that comes after it is never given to the module."""
        out = []
        while self.waiting and not (wait_for_far and not self.far_arrived()):
            cleaned = self._process(self._near.take(self._near_done, APM_FRAME))
            # Silence the stamps inserted into the microphone's stream keeps the canceller in
            # step with the speaker, but it was never heard: passed on, half a second of it
            # split a question in two ("Tell me about Canber-" … "ra." heard as "for a.", a
            # turn of its own). The canceller still takes it, frame by frame as before.
            if not self._near.is_filled(self._near_done, APM_FRAME):
                out.append(cleaned)
            self._near_done += APM_FRAME
            self._near.drop_before(self._near_done)
        return np.concatenate(out) if out else np.zeros(0, dtype=np.float32)

    def _process(self, near: np.ndarray) -> np.ndarray:
        """One 10 ms microphone frame starting at self._near_done, with its far end first."""
        frame_at = self._near_done
        if self._far_fed < frame_at - FAR_KEPT or self._far_fed > frame_at + FAR_KEPT:
            self._far_fed = frame_at  # first frame, or the clocks jumped: start pairing afresh
        # How far the speaker's queued audio reaches past this frame: the delay a canceller fed
        # in arrival order would have had to be told (output plus input latency).
        if self._far.runs:
            self.stats.lead_ms = (self._far.end - frame_at) * 1000 // SAMPLE_RATE
        began = time.thread_time()
        # Everything the speaker played up to the end of this microphone frame goes in first.
        fars = []
        while self._far_fed < frame_at + APM_FRAME:
            fars.append(self._far.take(self._far_fed, APM_FRAME))
            self._far_fed += APM_FRAME
        self._far.drop_before(self._far_fed)
        far_energy = sum(float(np.dot(far, far)) for far in fars)
        far_silent = far_energy <= FAR_SILENT * APM_FRAME * max(1, len(fars))
        self._far_silent_run = self._far_silent_run + 1 if far_silent else 0
        quiet = (self._far_silent_run > QUIET_TAIL_FRAMES
                 and float(np.dot(near, near)) <= NEAR_QUIET * APM_FRAME)
        if self._apm is not None and self.settings.echo_cancellation and not quiet:
            for far in fars:
                self._apm.process_reverse_stream(self._frame(far))
        clean = near
        self.stats.quiet_frames += quiet
        if self._apm is not None and not quiet:
            if self.settings.echo_cancellation:
                # The stamps already paired the far end with this frame; the hint is only what
                # the 10 ms framing leaves over (AEC3 finds the acoustic path itself).
                self._apm.set_stream_delay_ms((self._far_fed - frame_at - APM_FRAME) * 1000 // SAMPLE_RATE)
            frame = self._frame(near)
            self._apm.process_stream(frame)
            clean = np.frombuffer(frame.data, dtype=np.int16).astype(np.float32) / _INT16
        if far_energy / APM_FRAME >= self.FAR_ACTIVE:
            self._spoken.append((far_energy, float(np.dot(near, near))))
            self._hears_her = None
            self._learned += 1
        if (self._far.runs, self._far.moves) != self._far_shape:
            self._far_shape, self._learned = (self._far.runs, self._far.moves), 0
        self.stats.settled = (not self.settings.echo_cancellation or self._learned >= SETTLED_FRAMES
                              or not self.hears_her)
        if self.settings.echo_cancellation and not self.hears_her:
            clean = near  # nothing of hers to remove, and the module would suppress the user
        self._count(far_energy, near, clean, time.thread_time() - began)
        return clean

    @property
    def hears_her(self) -> bool:
        """True unless the microphone measurably hears none of what she plays (NO_ECHO_COUPLING)."""
        if self._hears_her is None:
            if len(self._spoken) < COUPLING_MIN_FRAMES:
                return True
            far, near = np.median(np.array(self._spoken), axis=0)
            self._hears_her = float(near) >= NO_ECHO_COUPLING * float(far)
        return self._hears_her

    def _frame(self, samples: np.ndarray):
        if self._frame_type is None:
            from livekit.rtc import AudioFrame

            self._frame_type = AudioFrame
        pcm = (np.clip(samples, -1.0, 1.0) * _INT16).astype(np.int16)
        return self._frame_type(bytearray(pcm.tobytes()), SAMPLE_RATE, 1, APM_FRAME)

    def _count(self, far_energy: float, near: np.ndarray, clean: np.ndarray, busy: float) -> None:
        s = self.stats
        s.frames += 1
        s.busy_s += busy
        if far_energy / APM_FRAME >= self.FAR_ACTIVE:
            s.echo_frames += 1
            s.far_energy += far_energy
            s.raw_energy += float(np.dot(near, near))
            s.clean_energy += float(np.dot(clean, clean))
