"""Ship the top-level assets/ and personality/ folders inside the wheel, and the data files the
code's own packages read.

They live at the repository root (the product's layout) and install as
companion/share/assets and companion/share/personality; companion.paths.resource_dir finds either.
Their subfolders are listed as packages too: setuptools warns about every folder it would
otherwise take for an importable package left out of `packages`.
"""

from pathlib import Path

from setuptools import find_packages, setup

DATA_FOLDERS = {"companion.share.assets": "assets", "companion.share.personality": "personality"}
CODE_DATA = {"companion.voice.turns.text_model": ["turn_head.json"]}
"""Data files inside the code's own packages (the words' turn head, trained in bench/text_turn_train)."""


def data_packages() -> list[str]:
    """Each data folder and its subfolders, as package names."""
    names = []
    for package, folder in DATA_FOLDERS.items():
        names.append(package)
        names += [".".join([package, *sub.relative_to(folder).parts]) for sub in sorted(Path(folder).rglob("*"))
                  if sub.is_dir() and "__pycache__" not in sub.parts]
    return names


setup(
    packages=find_packages(include=["companion", "companion.*"]) + data_packages(),
    package_dir=DATA_FOLDERS,
    package_data={name: ["*"] for name in data_packages()} | CODE_DATA,
)
