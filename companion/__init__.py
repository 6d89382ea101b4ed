"""companion: a voice-first desktop companion."""

__version__ = "0.1.0"
