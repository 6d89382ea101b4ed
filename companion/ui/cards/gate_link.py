"""The approval gate as the window's cards meet it: the core's gate (or one built for the
window when the runtime leaves the asking to the front-end), answered by the cards."""

from __future__ import annotations


def link_gate(core, paths, bus, panel):
    """The gate `core` asks through, answered by `panel`'s cards; returns the gate."""
    from companion.safety.consent.approval import CardApprover
    from companion.safety.gate import build_gate

    gate = core.services.get("gate")
    if gate is None:  # the runtime leaves the asking to the front-end
        gate = build_gate(core.workspace, paths.approvals_file, paths.data_dir, bus=bus)
        core.services["gate"] = gate
    if not hasattr(gate.approver, "answer"):
        gate.approver = CardApprover()
    panel.set_answer(lambda rid, decision, always: gate.answer(rid, decision, always=always))
    return gate
