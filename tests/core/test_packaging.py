"""A built wheel carries the shipped folders, and a plain (non-editable) install finds them.

The wheel is built from a copy of the source tree with pip's normal isolated build, the way
`pip install .` builds it; the installed copy is then used with site-packages' editable hook
switched off (`python -S`), so nothing can quietly come from this checkout instead.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from places import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for folder in ("companion", "assets", "personality"):
        shutil.copytree(ROOT / folder, source / folder, ignore=skip)
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    (built,) = out.glob("companion-*.whl")
    return built


def test_the_wheel_carries_the_personality_and_assets_folders(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "companion/share/personality/default.md" in names
    shipped_assets = {p.relative_to(ROOT).as_posix() for p in (ROOT / "assets").rglob("*") if p.is_file()}
    assert shipped_assets, "assets/ is empty"
    assert {"companion/share/" + a for a in shipped_assets} <= names


def test_the_wheel_carries_every_module_and_data_file_of_the_package(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    files = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "companion").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert files - names == set()
    assert any(n.endswith("entry_points.txt") for n in names)


def test_an_installed_wheel_finds_its_resources_and_all_eight_tools(wheel, tmp_path):
    target = tmp_path / "installed"
    zipfile.ZipFile(wheel).extractall(target)
    site_packages = sysconfig.get_paths()["purelib"]
    script = (
        "import sys\n"
        f"sys.path[:0] = [{str(target)!r}, {site_packages!r}]\n"
        "import companion\n"
        "from companion.paths import resource_dir\n"
        "from companion.tools import registry\n"
        "registry.discover()\n"
        "print(companion.__file__)\n"
        "print(resource_dir('personality'))\n"
        "print(sorted(registry.registry()))\n"
    )
    result = subprocess.run(
        [sys.executable, "-S", "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert result.returncode == 0, result.stderr
    module_file, personality, tools = result.stdout.splitlines()
    assert Path(module_file).is_relative_to(target)
    assert Path(personality) == target / "companion" / "share" / "personality"
    assert (Path(personality) / "default.md").is_file()
    for name in ("get_time", "todo", "memory_write", "memory_recall",
                 "read_file", "write_file", "patch", "search_files"):
        assert repr(name) in tools
