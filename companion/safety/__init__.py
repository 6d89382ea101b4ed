"""Safety: the path jail (jail), the approval gate (gate, rules, grants, approval, terminal),
the sandboxed process runner (runner), the code scan (code_scan) and the web address guard (netguard)."""
