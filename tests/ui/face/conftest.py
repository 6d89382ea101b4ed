"""The window's face fed by a core's bus through the real bridge, as the app wires it."""

from __future__ import annotations

import pytest

from companion.events import EventBus
from companion.ui.bridge import EventBridge
from companion.ui.window import CompanionWindow


@pytest.fixture
def bus_to_face(qtbot):
    """(bus, face): her window shown, listening, its first frame painted; the bridge detached after."""
    window = CompanionWindow(push_to_talk_key="F8")
    qtbot.addWidget(window)
    bus, bridge, face = EventBus(), EventBridge(), window.face
    bridge.attach(bus)
    window.connect_bridge(bridge)
    face.set_state("listening")
    window.show()
    qtbot.waitUntil(lambda: face.last_frame is not None, timeout=2000)
    yield bus, face
    bridge.detach()
