"""The tool registry: specs from modules, families, check() caching, companion filtering, plugins."""

from __future__ import annotations

import logging
import os
from types import ModuleType

import pytest

from companion.config import Paths, Settings, with_overrides
from companion.settings_file import load_settings, save_settings
from companion.tools import registry
from companion.tools.registry import (
    CHECK_TTL_S,
    GENERIC_ANNOUNCE,
    GENERIC_COMPLETE,
    GENERIC_FAIL,
    GENERIC_HEARTBEAT,
    PluginInfo,
    Registry,
    ToolRegistrationError,
    spec_from_module,
)


async def _ok(args, ctx) -> str:
    return "ok"


def _module(name: str = "fake", **attrs) -> ModuleType:
    module = ModuleType(f"tests.fake_tools.{name}")
    module.SCHEMA = {"type": "function", "name": name, "description": "d", "parameters": {}}
    module.execute = _ok
    for key, value in attrs.items():
        setattr(module, key, value)
    return module


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _plugin_source(name: str, *, toolset: str = "core", extra: str = "") -> str:
    return (
        f"{extra}\n"
        f"SCHEMA = {{'type': 'function', 'name': {name!r}, 'description': 'plugin tool'}}\n"
        f"TOOLSET = {toolset!r}\n"
        "async def execute(args, ctx):\n"
        "    return 'from the plugin'\n"
    )


# --- specs from modules ---------------------------------------------------------------


def test_a_module_whose_schema_is_not_a_dict_is_skipped_silently(caplog):
    reg = Registry()
    not_a_tool = _module("helper", SCHEMA="just a string")
    no_schema = ModuleType("tests.fake_tools.none")
    with caplog.at_level(logging.DEBUG):
        reg.register_modules([not_a_tool, no_schema, _module("real")])
    assert sorted(reg.tools()) == ["real"]
    assert caplog.records == []


def test_missing_attributes_get_the_documented_defaults():
    module = ModuleType("tests.fake_tools.bare")
    module.SCHEMA = {"name": "bare"}
    module.execute = _ok
    spec = spec_from_module(module)
    assert spec is not None
    assert (spec.toolset, spec.risk, spec.built_in) == ("core", "read", False)
    assert spec.announce == GENERIC_ANNOUNCE
    assert spec.heartbeat == GENERIC_HEARTBEAT
    assert spec.complete == GENERIC_COMPLETE
    assert spec.fail == GENERIC_FAIL
    assert spec.expressions == {"focus": "thinking", "fail": "sad"}
    assert spec.check is None
    assert spec.schema["type"] == "function"
    assert spec.schema["parameters"] == {"type": "object", "properties": {}}


def test_declared_attributes_are_kept_and_partial_expressions_merge_with_defaults():
    spec = spec_from_module(
        _module(
            "full",
            TOOLSET="file",
            RISK="write",
            ANNOUNCE="a",
            HEARTBEAT=["h1", "h2"],
            COMPLETE="c",
            FAIL="f",
            EXPRESSIONS={"focus": "determined"},
        )
    )
    assert spec is not None
    assert (spec.toolset, spec.risk, spec.announce, spec.complete, spec.fail) == (
        "file", "write", "a", "c", "f"
    )
    assert spec.heartbeat == ("h1", "h2")
    assert spec.expressions == {"focus": "determined", "fail": "sad"}


def test_a_heartbeat_given_as_one_string_is_one_line_not_its_letters():
    spec = spec_from_module(_module("hb", HEARTBEAT="Still going..."))
    assert spec is not None and spec.heartbeat == ("Still going...",)


def test_a_tool_with_an_unknown_risk_or_a_plain_execute_is_refused_loudly():
    with pytest.raises(ValueError, match="RISK"):
        spec_from_module(_module("risky", RISK="dangerous"))
    with pytest.raises(ValueError, match="async"):
        spec_from_module(_module("sync", execute=lambda args, ctx: "x"))


def test_a_name_cannot_be_registered_twice_unless_overriding():
    reg = Registry()
    reg.register_modules([_module("twice")])
    with pytest.raises(ToolRegistrationError):
        reg.register_modules([_module("twice")])
    replacement = spec_from_module(_module("twice", ANNOUNCE="new"))
    reg.register(replacement, allow_override=True)
    assert reg.tools()["twice"].announce == "new"
    reg.deregister("twice")
    assert reg.dispatchable("twice") is None


# --- families ------------------------------------------------------------------------


def test_a_disabled_toolset_is_not_dispatchable_and_not_offered():
    reg = Registry()
    reg.register_modules([_module("reader", TOOLSET="file"), _module("clock", TOOLSET="core")])
    assert reg.dispatchable("reader") is not None
    reg.set_toolset_enabled("file", False)
    assert reg.dispatchable("reader") is None
    assert [s["name"] for s in reg.schemas_for("companion")] == ["clock"]
    assert [s["name"] for s in reg.schemas_for("work")] == ["clock"]
    assert reg.disabled_toolsets() == frozenset({"file"})
    reg.set_toolset_enabled("file", True)
    assert reg.dispatchable("reader") is not None


def test_dispatchable_reads_the_switch_at_once_even_within_the_check_cache():
    clock = FakeClock()
    reg = Registry(clock=clock)
    reg.register_modules([_module("fresh", TOOLSET="memory", check=lambda: True)])
    assert [s["name"] for s in reg.schemas_for("companion")] == ["fresh"]
    reg.set_toolset_enabled("memory", False)
    assert reg.dispatchable("fresh") is None
    assert reg.schemas_for("companion") == []


def test_an_unknown_name_is_not_dispatchable():
    assert Registry().dispatchable("no_such_tool") is None


def test_companion_mode_offers_only_companion_families_and_work_mode_offers_all():
    reg = Registry()
    reg.register_modules([_module("clock", TOOLSET="core"), _module("browse", TOOLSET="mcp")])
    assert [s["name"] for s in reg.schemas_for("companion")] == ["clock"]
    assert [s["name"] for s in reg.schemas_for("work")] == ["browse", "clock"]
    assert [s["name"] for s in reg.schemas_for("work", exclude=["clock"])] == ["browse"]


def test_all_toolsets_lists_every_family_with_its_tools():
    reg = Registry()
    reg.register_modules([_module("a", TOOLSET="file"), _module("b", TOOLSET="file"), _module("c")])
    assert reg.all_toolsets() == {"core": ["c"], "file": ["a", "b"]}


# --- check() ------------------------------------------------------------------------


def test_check_results_are_cached_for_thirty_seconds():
    clock = FakeClock()
    calls = []
    answers = iter([True, False])

    def check() -> bool:
        calls.append(clock.now)
        return next(answers)

    reg = Registry(clock=clock)
    reg.register_modules([_module("cached", check=check)])
    assert [s["name"] for s in reg.schemas_for("work")] == ["cached"]
    clock.now += CHECK_TTL_S - 1
    assert [s["name"] for s in reg.schemas_for("work")] == ["cached"]
    assert len(calls) == 1
    clock.now += 2
    assert reg.schemas_for("work") == []
    assert len(calls) == 2


def test_a_raising_check_keeps_the_last_known_answer():
    clock = FakeClock()
    state = {"raise": False}

    def check() -> bool:
        if state["raise"]:
            raise RuntimeError("backend probe broke")
        return True

    reg = Registry(clock=clock)
    reg.register_modules([_module("flaky", check=check)])
    assert [s["name"] for s in reg.schemas_for("work")] == ["flaky"]
    state["raise"] = True
    clock.now += CHECK_TTL_S + 1
    assert [s["name"] for s in reg.schemas_for("work")] == ["flaky"]


def test_a_raising_check_with_nothing_cached_counts_as_unavailable():
    def check() -> bool:
        raise RuntimeError("no idea")

    reg = Registry(clock=FakeClock())
    reg.register_modules([_module("unknown", check=check), _module("plain")])
    assert [s["name"] for s in reg.schemas_for("work")] == ["plain"]
    # Unavailable only means "not offered"; a failing check does not hide it from dispatch.
    assert reg.dispatchable("unknown") is not None


def test_an_async_check_counts_as_a_broken_check():
    async def check() -> bool:
        return True

    reg = Registry(clock=FakeClock())
    reg.register_modules([_module("asynccheck", check=check)])
    assert reg.schemas_for("work") == []


# --- plugins ------------------------------------------------------------------------


def test_a_plugin_from_the_plugins_folder_is_registered_in_its_own_family(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "weather.py").write_text(_plugin_source("weather_now", toolset="core"))
    reg = Registry()
    reg.discover_plugins(plugins, enabled=["plugin:weather"])
    spec = reg.dispatchable("weather_now")
    assert spec is not None
    assert spec.toolset == "plugin:weather"
    # A plugin family is not a companion family: work mode only.
    assert reg.schemas_for("companion") == []
    assert [s["name"] for s in reg.schemas_for("work")] == ["weather_now"]


async def test_a_loaded_plugin_runs(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "echo.py").write_text(_plugin_source("echo"))
    reg = Registry()
    reg.discover_plugins(plugins, enabled=["plugin:echo"])
    spec = reg.dispatchable("echo")
    assert spec is not None
    assert await spec.execute({}, None) == "from the plugin"


def test_a_plugin_that_raises_on_import_is_logged_and_skipped(tmp_path, caplog):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "broken.py").write_text("raise RuntimeError('plugin bug')\n")
    (plugins / "quits.py").write_text("import sys\nsys.exit(3)\n")
    (plugins / "good.py").write_text(_plugin_source("good_tool"))
    reg = Registry()
    with caplog.at_level(logging.ERROR, logger="companion.tools.registry"):
        reg.discover_plugins(plugins, enabled=["plugin:broken", "plugin:quits", "plugin:good"])
    assert sorted(reg.tools()) == ["good_tool"]
    assert reg.plugins()["plugin:broken"].problem == "it failed to load (RuntimeError: plugin bug)"
    logged = caplog.text
    assert "plugin:broken failed to load" in logged and "plugin bug" in logged
    assert "plugin:quits failed to load" in logged


def test_a_plugin_cannot_take_an_existing_tools_name(tmp_path, caplog):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "impostor.py").write_text(_plugin_source("read_file"))
    reg = Registry()
    reg.register_modules([_module("read_file", TOOLSET="file")])
    with caplog.at_level(logging.WARNING, logger="companion.tools.registry"):
        reg.discover_plugins(plugins, enabled=["plugin:impostor"])
    assert reg.tools()["read_file"].toolset == "file"
    assert reg.tools()["read_file"].module == "tests.fake_tools.read_file"
    assert "tried to replace the tool 'read_file'" in caplog.text


def test_a_switched_off_plugins_code_is_never_executed(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    marker = tmp_path / "imported.marker"
    (plugins / "spy.py").write_text(
        _plugin_source(
            "spy_tool",
            extra=f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')",
        )
    )
    reg = Registry()
    reg.set_toolset_enabled("plugin:spy", False)
    reg.discover_plugins(plugins, enabled=["plugin:spy"])
    assert not marker.exists()
    assert reg.dispatchable("spy_tool") is None
    assert reg.all_toolsets() == {"plugin:spy": []}
    reg.set_toolset_enabled("plugin:spy", True)
    assert marker.exists()
    assert reg.dispatchable("spy_tool") is not None


def test_a_plugin_switched_off_and_on_again_comes_back_without_re_running(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    counter = tmp_path / "runs.txt"
    (plugins / "counted.py").write_text(
        _plugin_source(
            "counted_tool",
            extra=(
                "import pathlib\n"
                f"_p = pathlib.Path({str(counter)!r})\n"
                "_p.write_text(_p.read_text() + 'x' if _p.exists() else 'x')"
            ),
        )
    )
    reg = Registry()
    reg.discover_plugins(plugins, enabled=["plugin:counted"])
    reg.set_toolset_enabled("plugin:counted", False)
    assert reg.dispatchable("counted_tool") is None
    assert "counted_tool" not in reg.tools()
    reg.set_toolset_enabled("plugin:counted", True)
    assert reg.dispatchable("counted_tool") is not None
    assert counter.read_text() == "x"


def test_a_plugin_dropped_in_the_folder_is_listed_but_never_imported_until_enabled(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    marker = tmp_path / "imported.marker"
    side_effect = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')"
    (plugins / "dropped.py").write_text(_plugin_source("dropped_tool", extra=side_effect))
    try:
        reg = registry.discover(plugin_dir=plugins)
        assert not marker.exists()
        assert reg.dispatchable("dropped_tool") is None
        assert reg.plugins() == {"plugin:dropped": PluginInfo("plugin:dropped", str(plugins / "dropped.py"), False)}
        assert reg.all_toolsets()["plugin:dropped"] == []
        # Switching its family "on" is not enabling it: only the user's opt-in imports it.
        reg.set_toolset_enabled("plugin:dropped", True)
        assert not marker.exists()
    finally:
        registry.discover()


def test_a_plugin_enabled_in_the_settings_file_is_imported_at_the_next_discover(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    marker = tmp_path / "imported.marker"
    side_effect = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')"
    (plugins / "chosen.py").write_text(_plugin_source("chosen_tool", extra=side_effect))
    paths = Paths.default(tmp_path / "config")
    save_settings(paths, with_overrides(Settings(), tools={"enabled_plugins": ("plugin:chosen",)}))
    try:
        reg = registry.discover(plugin_dir=plugins,
                                enabled_plugins=load_settings(paths).settings.tools.enabled_plugins)
        assert marker.read_text() == "ran"
        assert reg.dispatchable("chosen_tool") is not None
        assert reg.plugins()["plugin:chosen"].loaded
        # Switched off again it is unloaded; a disabled family wins over the opt-in.
        reg.set_plugin_enabled("plugin:chosen", False)
        assert reg.dispatchable("chosen_tool") is None
        reg.set_toolset_enabled("plugin:chosen", False)
        reg.set_plugin_enabled("plugin:chosen", True)
        assert reg.dispatchable("chosen_tool") is None
    finally:
        registry.discover()


def test_an_installed_entry_point_plugin_is_listed_but_imported_only_when_enabled(tmp_path, monkeypatch):
    site = tmp_path / "site"
    dist = site / "spyplug-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: spyplug\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[companion.tools]\nspy = spyplug_tool\n")
    marker = tmp_path / "imported.marker"
    (site / "spyplug_tool.py").write_text(
        _plugin_source("spy_ep_tool", extra=f"import pathlib\npathlib.Path({str(marker)!r}).touch()"))
    monkeypatch.syspath_prepend(str(site))
    reg = Registry()
    reg.discover_plugins(None)
    assert reg.plugins()["plugin:spy"] == PluginInfo(
        "plugin:spy", "entry point spyplug_tool from the installed package spyplug", False)
    assert not marker.exists()
    reg.set_plugin_enabled("plugin:spy", True)
    assert marker.exists() and reg.dispatchable("spy_ep_tool") is not None


def test_a_plugin_file_others_could_have_changed_is_never_imported_even_when_enabled(tmp_path):
    plugins, elsewhere = tmp_path / "plugins", tmp_path / "workspace"
    plugins.mkdir(mode=0o755)
    elsewhere.mkdir()
    markers = {name: tmp_path / f"{name}.marker" for name in ("shared", "linked", "owned", "fine")}

    def source(name: str) -> str:
        return _plugin_source(f"{name}_tool", extra=f"import pathlib\npathlib.Path({str(markers[name])!r}).touch()")

    (plugins / "shared.py").write_text(source("shared"))
    (plugins / "shared.py").chmod(0o666)
    (elsewhere / "linked.py").write_text(source("linked"))
    (plugins / "linked.py").symlink_to(elsewhere / "linked.py")
    (plugins / "owned.py").write_text(source("owned"))
    if os.geteuid() == 0:
        os.chown(plugins / "owned.py", 65534, 65534)
    (plugins / "fine.py").write_text(source("fine"))
    reg = Registry()
    reg.discover_plugins(plugins, enabled=[f"plugin:{name}" for name in markers])
    problems = {family: info.problem for family, info in reg.plugins().items()}
    assert problems["plugin:shared"] == ("I won't load it: other users can change the file (mode 666); "
                                         "make it writable only by you (chmod go-w)")
    assert problems["plugin:linked"] == (f"I won't load it: it is a link to {elsewhere / 'linked.py'}, and a "
                                         "plugin must be the file itself, in the plugins folder")
    if os.geteuid() == 0:
        assert problems["plugin:owned"] == "I won't load it: the file belongs to another user (uid 65534)"
    assert problems["plugin:fine"] == ""
    assert sorted(p.stem for p in tmp_path.glob("*.marker")) == ["fine"] + (["owned"] if os.geteuid() else [])
    # A folder anyone can write makes every plugin in it suspect.
    plugins.chmod(0o777)
    again = Registry()
    again.discover_plugins(plugins, enabled=["plugin:fine"])
    assert again.plugins()["plugin:fine"].problem.startswith("I won't load it: other users can change its folder")


def test_discover_registers_builtins_action_tools_and_plugins(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "extra.py").write_text(_plugin_source("extra_tool"))
    try:
        reg = registry.discover(plugin_dir=plugins, disabled=["memory"], enabled_plugins=["plugin:extra"])
        assert registry.current() is reg
        names = set(registry.registry())
        assert {"get_time", "todo", "read_file", "search_files", "extra_tool"} <= names
        assert registry.dispatchable("memory_write") is None
        assert registry.disabled_toolsets() == frozenset({"memory"})
        offered = {s["name"] for s in registry.schemas_for("companion")}
        assert "memory_recall" not in offered and "extra_tool" not in offered
        assert "get_time" in offered
    finally:
        registry.discover()
