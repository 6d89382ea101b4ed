"""Knowing voices, asked once, plainly (issue 56): while the setting is "ask", the first call that
opens her follow-up window (or a card waiting for an answer) shows one banner asking; Yes or No
is saved to the settings file, and she never asks again.

The real bridge (core events in, Qt signals out) and the real settings keeper on disk.
"""

from __future__ import annotations

from dataclasses import replace

from companion import events as ev
from companion.config import Paths, Settings
from companion.settings_file import load_settings
from companion.ui.banner import (
    KNOW_VOICES_KEY,
    KNOW_VOICES_QUESTION,
    BannerArea,
    KnowVoicesQuestion,
)
from companion.ui.bridge import EventBridge
from companion.ui.settings.keeper import SettingsKeeper


def _asking(qtbot, tmp_path, settings: Settings | None = None):
    keeper = SettingsKeeper(Paths.default(tmp_path), settings or Settings())
    banners = BannerArea()
    qtbot.addWidget(banners)
    bridge = EventBridge()
    bus = ev.EventBus()
    bus.subscribe(bridge.deliver)

    def save(answer: str) -> None:
        keeper.apply(replace(keeper.settings, voice=replace(keeper.settings.voice, know_voices=answer)))

    question = KnowVoicesQuestion(banners, lambda: keeper.settings.voice.know_voices, save)
    question.attach(bridge)
    return keeper, banners, bridge, bus


def _called(qtbot, bridge, bus) -> None:
    with qtbot.waitSignal(bridge.attention):
        bus.emit(ev.AttentionChanged("attentive", "name"))


def test_the_first_call_asks_once_and_yes_is_saved_to_the_settings_file(qtbot, tmp_path):
    keeper, banners, bridge, bus = _asking(qtbot, tmp_path)
    with qtbot.waitSignal(bridge.attention):
        bus.emit(ev.AttentionChanged("awake"))
    assert banners.banner(KNOW_VOICES_KEY) is None  # nothing needs a voice yet

    _called(qtbot, bridge, bus)
    banner = banners.banner(KNOW_VOICES_KEY)
    assert banner is not None and banner.text() == KNOW_VOICES_QUESTION
    banner.buttons["Yes"].click()

    assert keeper.settings.voice.know_voices == "yes"
    assert load_settings(Paths.default(tmp_path)).settings.voice.know_voices == "yes"
    assert banners.banner(KNOW_VOICES_KEY) is None
    _called(qtbot, bridge, bus)
    assert banners.banner(KNOW_VOICES_KEY) is None  # answered: never asked again


def test_no_is_saved_too_and_a_dismissed_question_is_not_asked_again(qtbot, tmp_path):
    keeper, banners, bridge, bus = _asking(qtbot, tmp_path)
    _called(qtbot, bridge, bus)
    banners.banner(KNOW_VOICES_KEY).buttons["No"].click()
    assert load_settings(Paths.default(tmp_path)).settings.voice.know_voices == "no"

    keeper, banners, bridge, bus = _asking(qtbot, tmp_path / "other")
    _called(qtbot, bridge, bus)
    banners.banner(KNOW_VOICES_KEY).dismiss()
    _called(qtbot, bridge, bus)
    assert banners.banner(KNOW_VOICES_KEY) is None and keeper.settings.voice.know_voices == "ask"


def test_a_card_waiting_for_an_answer_asks_too_and_an_answered_setting_never_asks(qtbot, tmp_path):
    _keeper, banners, bridge, bus = _asking(qtbot, tmp_path)
    with qtbot.waitSignal(bridge.approval_needed):
        bus.emit(ev.ApprovalNeeded("r1", "ls", "a command", False, 30.0))
    assert banners.banner(KNOW_VOICES_KEY) is not None

    answered = Settings()
    answered = replace(answered, voice=replace(answered.voice, know_voices="no"))
    _keeper, banners, bridge, bus = _asking(qtbot, tmp_path / "answered", answered)
    _called(qtbot, bridge, bus)
    assert banners.banner(KNOW_VOICES_KEY) is None
