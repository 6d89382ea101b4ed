"""Ship the top-level assets/ and personality/ folders inside the wheel.

They live at the repository root (the product's layout) and install as
companion/share/assets and companion/share/personality; companion.paths.resource_dir finds either.
"""

from setuptools import find_packages, setup

DATA_FOLDERS = {"companion.share.assets": "assets", "companion.share.personality": "personality"}

setup(
    packages=find_packages(include=["companion", "companion.*"]) + list(DATA_FOLDERS),
    package_dir=DATA_FOLDERS,
    package_data={name: ["*", "**/*"] for name in DATA_FOLDERS},
)
