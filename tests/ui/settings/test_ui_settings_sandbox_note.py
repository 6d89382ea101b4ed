"""Settings → Approvals says why the sandbox can't run here and the fix the probe found."""

from __future__ import annotations

from companion.safety.sandbox import probe
from companion.ui.settings.tools import ApprovalsTab


def test_where_a_folder_stops_the_sandbox_the_approvals_tab_names_that_folder_s_fix(qtbot, monkeypatch):
    fix = "Let the sandbox's user into /opt/her (sudo chmod o+x /opt/her), then try again."
    monkeypatch.setattr(probe, "_unavailable",
                        lambda: ("The sandbox can't reach her program in /opt/her.", fix))
    tab = ApprovalsTab(None)
    qtbot.addWidget(tab)

    assert fix in tab.sandbox_note.text()
    assert probe.FIX not in tab.sandbox_note.text()
