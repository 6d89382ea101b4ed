"""Every tool module on disk in tools/builtin/ and tools/action/ reaches the live registry.

Importing a module is not registering it: a file someone added but forgot to list in
registry.builtin_modules() or ACTION_TOOLS is a red test here, not a tool nobody can call.
Helper modules whose names start with "_" are not tools.
"""

from __future__ import annotations

from pathlib import Path

import companion.tools.action as action_package
import companion.tools.builtin as builtin_package
from companion.events import EXPRESSIONS
from companion.tools import registry


def _tool_modules_on_disk(package) -> set[str]:
    folder = Path(package.__file__).parent
    return {
        f"{package.__name__}.{path.stem}"
        for path in folder.glob("*.py")
        if not path.name.startswith("_")
    }


def test_every_builtin_and_action_module_on_disk_is_in_the_live_registry():
    registry.discover()
    registered = {spec.module for spec in registry.registry().values()}
    on_disk = _tool_modules_on_disk(builtin_package) | _tool_modules_on_disk(action_package)
    assert on_disk, "no tool modules found on disk"
    forgotten = sorted(on_disk - registered)
    assert forgotten == [], (
        f"these tool modules are not registered: {forgotten}; list them in "
        "registry.builtin_modules() or tools/action/__init__.py ACTION_TOOLS"
    )


def test_the_first_eight_tools_are_registered_under_their_families():
    registry.discover()
    families = {name: spec.toolset for name, spec in registry.registry().items()}
    expected = {
        "get_time": "core",
        "todo": "core",
        "memory_write": "memory",
        "memory_recall": "memory",
        "read_file": "file",
        "write_file": "file",
        "patch": "file",
        "search_files": "file",
    }
    assert {name: families.get(name) for name in expected} == expected


def test_every_registered_tool_declares_its_voice_lines_and_faces():
    registry.discover()
    for spec in registry.registry().values():
        if spec.toolset.startswith(registry.PLUGIN_PREFIX):
            continue
        module = __import__(spec.module, fromlist=["_"])
        # A quiet tool never says its announce, heartbeat or complete line, so it needs none.
        said = ("FAIL",) if spec.quiet else ("ANNOUNCE", "HEARTBEAT", "COMPLETE", "FAIL")
        missing = [
            attr
            for attr in ("TOOLSET", "RISK", *said, "EXPRESSIONS")
            if not getattr(module, attr, None)
        ]
        assert missing == [], f"{spec.name} does not declare {missing}"
        assert spec.schema["name"] == spec.name
        assert spec.schema["parameters"]["type"] == "object"
        unknown_faces = set(spec.expressions.values()) - set(EXPRESSIONS)
        assert unknown_faces == set(), f"{spec.name} uses faces she cannot make: {unknown_faces}"
