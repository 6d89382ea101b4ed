"""Errors carry a stage, a code and a sentence she can say."""

from __future__ import annotations

from enum import StrEnum


class Stage(StrEnum):
    BRAIN = "brain"
    TOOLS = "tools"
    PERSONALITY = "personality"
    SETTINGS = "settings"
    AUDIO = "audio"
    HEARING = "hearing"
    SPEAKING = "speaking"
    SAFETY = "safety"


class CompanionError(Exception):
    """A failure at a stage boundary, with a sentence fit to be spoken to the user."""

    stage: Stage = Stage.BRAIN

    def __init__(self, code: str, sentence: str, *, stage: Stage | None = None) -> None:
        super().__init__(sentence)
        self.code = code
        self.sentence = sentence
        if stage is not None:
            self.stage = stage

    def __str__(self) -> str:
        return self.sentence
