"""Conversational tools; each is imported by name in registry.builtin_modules()."""
