"""Safety: the path jail (jail) and race-free file access (beneath), the approval gate (gate,
rules, flags, danger, grants, pins, approval, terminal), the one door to start a process
(door) and the bubblewrap sandbox it runs in (sandbox), the code scan that explains code on
the card (code_scan) and the web address guard (netguard)."""
