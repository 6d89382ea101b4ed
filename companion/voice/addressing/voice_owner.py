"""Who owns the floor by voice: the follow-up window is the caller's, Only me is the user's.

Asked by the calling door (voice.addressing.calling) when knowing voices is on, after the words
and before the policy's verdict is taken. The voice is asked only when a decision depends on
it; when it can't tell (too little audio, no model, nobody enrolled yet) the words decide, as
they did before she knew voices.
- Inside the follow-up window (or talking over her), an utterance that is no call must be in
  the caller's voice: another voice needs its own call ("other-voice"). Talking over her, a
  known voice stops her too, and only a voice clearly another's is ignored (STOP_MARGIN).
- Only me: an utterance in a known voice is hers to answer with no call ("only-me"); any other
  voice is ignored even when it calls her ("not-you").
The caller's voice is remembered at each call, and learned from (voiceprint.enrolment).
"""

from __future__ import annotations

import logging

from companion.voice.addressing.addressed import Addressing, Listening, Verdict
from companion.voice.voiceprint import Voices

__all__ = ["CALL_REASONS", "STOP_MARGIN", "by_voice"]

log = logging.getLogger(__name__)

CALL_REASONS = frozenset({"name", "called", "wake-phrase", "bare-call"})
"""Verdicts that mean the utterance called her: its voice owns the window that follows."""
STOP_MARGIN = 0.15
"""Talking over her, a voice is ignored only when it scores this far below both thresholds."""


async def by_voice(policy: Addressing, voices: Voices, text: str, start_s: float, end_s: float, *,
                   stopped_her: bool = False) -> Verdict:
    """The policy's verdict on the utterance, with what its voice changes (see the module)."""
    peeked = policy.judge(text, start_s, end_s, peek=True, stopped_her=stopped_her)
    if policy.settings.mode == Listening.ONLY_ME:
        match = await voices.known(start_s, end_s)
        if match is not None and match.name is None and stopped_her and (
                match.score >= voices.known_threshold - STOP_MARGIN):
            match = None  # a short "Stop!" near your voice: the words decide, as below (STOP_MARGIN)
        if match is not None and match.name is None:
            log.info("voice: not a voice I know (%.2f, %.1f s): in Only me I answer only you", match.score,
                     end_s - start_s)
            return Verdict(False, "not-you")
        if match is not None and not peeked.turn and peeked.reason != "bare-call":
            log.info("voice: %s (%.2f): in Only me that needs no call", match.name, match.score)
            voices.followed_up(start_s, end_s)
            return Verdict(True, "only-me")
    elif peeked.reason == "follow-up":
        same, score = await voices.same_as_caller(start_s, end_s)
        if same is False and stopped_her:
            # Not stopping for the user is worse than stopping for a guest, and a short "Stop!"
            # says little about a voice (Joe's "Stop." scored 0.54 against his print): talking
            # over her, only a voice clearly unlike the caller's and every known one is ignored.
            known = await voices.known(start_s, end_s)
            same = score >= voices.pair_threshold - STOP_MARGIN or (
                known is not None and known.score >= voices.known_threshold - STOP_MARGIN)
        if same is False:
            log.info("voice: another voice inside the follow-up window (%.2f against the caller's): "
                     "it needs its own call", score)
            return Verdict(False, "other-voice")
        log.info("voice: the follow-up is in the caller's voice (%.2f)%s", score, "" if same else ", or I can't tell")
    verdict = policy.judge(text, start_s, end_s, stopped_her=stopped_her)
    if verdict.reason in CALL_REASONS:
        voices.called_by(start_s, end_s)
    elif verdict.reason == "follow-up":
        voices.followed_up(start_s, end_s)
    return verdict
