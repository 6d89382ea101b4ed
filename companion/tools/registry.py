"""The tool registry: the one place that knows which tools exist and which may run.

A tool is a module (see docs/adding-a-tool.md). `discover()` registers the built-in and
action tools, then plugins. Dispatch always goes through `dispatchable(name)`, which reads
the switched-off families fresh, so a Settings switch takes effect at once.

Plugins are opt-in: one found (an entry point, or a .py file in her plugins folder, which no
tool can write) is listed with where it comes from, but its code is never imported until the
user enabled it in Settings (tools.enabled_plugins) and its family is not switched off.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

from companion.tools.families import COMPANION_TOOLSETS, ON_REQUEST_TOOLSETS
from companion.tools.plugin_files import PluginRefused, file_loader
from companion.tools.spec import (
    DEFAULT_EXPRESSIONS,
    GENERIC_ANNOUNCE,
    GENERIC_COMPLETE,
    GENERIC_FAIL,
    GENERIC_HEARTBEAT,
    RISKS,
    Execute,
    ToolSpec,
    spec_from_module,
)

# What a tool is lives in spec.py; callers know it as the registry's, so it is re-exported.
__all__ = [
    "CHECK_TTL_S",
    "DEFAULT_EXPRESSIONS",
    "Execute",
    "GENERIC_ANNOUNCE",
    "GENERIC_COMPLETE",
    "GENERIC_FAIL",
    "GENERIC_HEARTBEAT",
    "PLUGIN_GROUP",
    "PLUGIN_PREFIX",
    "PluginInfo",
    "RISKS",
    "Registry",
    "ToolRegistrationError",
    "ToolSpec",
    "action_modules",
    "all_toolsets",
    "builtin_modules",
    "current",
    "deregister",
    "disabled_toolsets",
    "discover",
    "dispatchable",
    "register",
    "registry",
    "schemas_for",
    "set_toolset_enabled",
    "spec_from_module",
]

log = logging.getLogger(__name__)

CHECK_TTL_S = 30.0
PLUGIN_GROUP = "companion.tools"
PLUGIN_PREFIX = "plugin:"

@dataclass(frozen=True)
class PluginInfo:
    """A plugin found at discovery, loaded or not."""

    family: str
    """`plugin:<name>`: the unit the user enables in Settings."""
    source: str
    """Where its code is: the .py file's path, or the installed package's entry point."""
    loaded: bool
    problem: str = ""
    """Why an enabled plugin is not loaded (it failed to import, …); empty otherwise."""


class ToolRegistrationError(RuntimeError):
    pass


class Registry:
    """Registered tools, switched-off families and cached check() answers."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._tools: dict[str, ToolSpec] = {}
        self._disabled: set[str] = set()
        self._check_cache: dict[str, tuple[float, bool]] = {}
        self._clock = clock
        self._pending_plugins: dict[str, Callable[[], ModuleType]] = {}
        self._plugin_modules: dict[str, ModuleType] = {}
        self._plugin_sources: dict[str, str] = {}
        self._plugin_problems: dict[str, str] = {}
        self._enabled_plugins: set[str] = set()
        self._offered_families: dict[str, Callable[[bool], None]] = {}

    # --- registration -------------------------------------------------------------------
    def register(self, spec: ToolSpec, *, allow_override: bool = False) -> None:
        if spec.name in self._tools and not allow_override:
            raise ToolRegistrationError(f"a tool named {spec.name!r} is already registered")
        self._tools[spec.name] = spec
        self._check_cache.pop(spec.name, None)

    def deregister(self, name: str) -> None:
        self._tools.pop(name, None)
        self._check_cache.pop(name, None)

    def register_modules(self, modules: Iterable[ModuleType]) -> None:
        for module in modules:
            spec = spec_from_module(module)
            if spec is not None:
                self.register(spec)

    def tools(self) -> dict[str, ToolSpec]:
        """Every registered tool by name, switched on or off."""
        return dict(self._tools)

    # --- families -----------------------------------------------------------------------
    def offer_family(self, toolset: str, switched: Callable[[bool], None]) -> None:
        """A family whose tools arrive at runtime (an MCP server): it is listed even while it
        has no tools, and `switched(on)` is told every time it is switched."""
        self._offered_families[toolset] = switched

    def withdraw_family(self, toolset: str) -> None:
        """An offered family that no longer exists (its server was removed from the settings)."""
        self._offered_families.pop(toolset, None)

    def set_toolset_enabled(self, toolset: str, enabled: bool) -> None:
        if enabled:
            self._disabled.discard(toolset)
        else:
            self._disabled.add(toolset)
        switched = self._offered_families.get(toolset)
        if switched is not None:
            switched(enabled)
        elif toolset.startswith(PLUGIN_PREFIX):
            self._refresh_plugin(toolset)

    def disabled_toolsets(self) -> frozenset[str]:
        return frozenset(self._disabled)

    def all_toolsets(self) -> dict[str, list[str]]:
        """Every family, registered or found as a plugin not loaded, with its tool names."""
        families: dict[str, list[str]] = {
            name: [] for name in [*self._plugin_sources, *self._offered_families]
        }
        for spec in self._tools.values():
            families.setdefault(spec.toolset, []).append(spec.name)
        return {name: sorted(tools) for name, tools in sorted(families.items())}

    # --- what may run -------------------------------------------------------------------
    def dispatchable(self, name: str) -> ToolSpec | None:
        """The tool to run for `name`, or None when unknown or its family is switched off.

        Never cached: it reads the switches as they are now.
        """
        spec = self._tools.get(name)
        if spec is None or spec.toolset in self._disabled:
            return None
        return spec

    def is_available(self, spec: ToolSpec) -> bool:
        """check(), cached for 30 s; a raising check keeps the last answer (else unavailable)."""
        if spec.check is None:
            return True
        now = self._clock()
        cached = self._check_cache.get(spec.name)
        if cached is not None and now - cached[0] < CHECK_TTL_S:
            return cached[1]
        try:
            answer = spec.check()
            if inspect.isawaitable(answer):
                if inspect.iscoroutine(answer):
                    answer.close()
                raise TypeError("check() must be a plain function, not async")
            ok = bool(answer)
        except Exception:
            log.warning("check() of tool %s raised; keeping the last answer", spec.name, exc_info=True)
            ok = cached[1] if cached is not None else False
        self._check_cache[spec.name] = (now, ok)
        return ok

    def forget_checks(self) -> None:
        """Drop the cached check() answers (a setting they read has changed)."""
        self._check_cache.clear()

    def offered(
        self, mode: str, *, exclude: Iterable[str] = (), opened: Sequence[str] = ()
    ) -> list[ToolSpec]:
        """Tools to offer the model in `mode` ("companion" or "work").

        Work mode offers every family. Companion mode offers the families at hand, sorted by
        name, then each `opened` on-request family in the order it was opened: a family
        opened later only adds to the end, so the list before it stays the same bytes.
        """
        excluded = set(exclude)

        def family(toolset: str | None) -> list[ToolSpec]:
            return [spec for name, spec in sorted(self._tools.items())
                    if name not in excluded and spec.toolset not in self._disabled
                    and (toolset is None or spec.toolset == toolset) and self.is_available(spec)]

        if mode != "companion":
            return family(None)
        at_hand = [spec for spec in family(None)
                   if spec.toolset in COMPANION_TOOLSETS and spec.toolset not in ON_REQUEST_TOOLSETS]
        later = [spec for toolset in dict.fromkeys(opened) if toolset in ON_REQUEST_TOOLSETS
                 for spec in family(toolset)]
        return at_hand + later

    def schemas_for(
        self, mode: str, *, exclude: Iterable[str] = (), opened: Sequence[str] = ()
    ) -> list[dict[str, Any]]:
        """The flat SCHEMAs of the tools offered in `mode` (see offered())."""
        return [dict(spec.schema) for spec in self.offered(mode, exclude=exclude, opened=opened)]

    # --- plugins ------------------------------------------------------------------------
    def discover_plugins(self, plugin_dir: Path | None, enabled: Iterable[str] = ()) -> None:
        """Find plugins (entry points and .py files in `plugin_dir`); import only those the
        user `enabled` (family names, `plugin:<name>`) whose family is not switched off."""
        self._enabled_plugins.update(enabled)
        for ep in entry_points(group=PLUGIN_GROUP):
            package = f" from the installed package {ep.dist.name}" if ep.dist is not None else ""
            self._offer_plugin(PLUGIN_PREFIX + ep.name, ep.load, f"entry point {ep.value}{package}")
        if plugin_dir is not None and plugin_dir.is_dir():
            for path in sorted(plugin_dir.glob("*.py")):
                if not path.name.startswith("_"):
                    self._offer_plugin(PLUGIN_PREFIX + path.stem, file_loader(path), str(path))

    def set_plugin_enabled(self, toolset: str, enabled: bool) -> None:
        """The user's opt-in for one plugin family (Settings → Toolsets, applied on Save)."""
        if enabled:
            self._enabled_plugins.add(toolset)
        else:
            self._enabled_plugins.discard(toolset)
        self._refresh_plugin(toolset)

    def plugins(self) -> dict[str, PluginInfo]:
        """Every plugin found, by family, with where its code is and whether it is loaded."""
        return {family: PluginInfo(family, source, family in self._plugin_modules,
                                   self._plugin_problems.get(family, ""))
                for family, source in sorted(self._plugin_sources.items())}

    def _plugin_on(self, toolset: str) -> bool:
        return toolset in self._enabled_plugins and toolset not in self._disabled

    def _offer_plugin(self, toolset: str, loader: Callable[[], ModuleType], source: str) -> None:
        if toolset in self._plugin_sources:
            log.warning("plugin %s is found twice (%s and %s); the first is kept",
                        toolset, self._plugin_sources[toolset], source)
            return
        self._plugin_sources[toolset] = source
        # A plugin not enabled (or switched off) is never imported, let alone run.
        self._pending_plugins[toolset] = loader
        self._refresh_plugin(toolset)

    def _refresh_plugin(self, toolset: str) -> None:
        """Load or unload one plugin family to match its switches."""
        if self._plugin_on(toolset):
            loader = self._pending_plugins.pop(toolset, None)
            if loader is not None:
                self._load_plugin(toolset, loader)
                if toolset not in self._plugin_modules:
                    self._pending_plugins[toolset] = loader  # switching it off and on tries again
        else:
            self._unload_plugin(toolset)

    def _load_plugin(self, toolset: str, loader: Callable[[], ModuleType]) -> None:
        self._plugin_problems.pop(toolset, None)
        try:
            module = loader()
            spec = spec_from_module(module, toolset=toolset)
            if spec is None:
                log.warning("plugin %s has no SCHEMA dict; skipped", toolset)
                self._plugin_problems[toolset] = "it has no SCHEMA, so it is not a tool"
                return
            if spec.name in self._tools:
                log.warning("plugin %s tried to replace the tool %r; skipped", toolset, spec.name)
                self._plugin_problems[toolset] = f"it tried to replace the tool {spec.name!r}"
                return
            self.register(spec)
        except PluginRefused as exc:
            log.warning("plugin %s refused: %s", toolset, exc)
            self._plugin_problems[toolset] = f"I won't load it: {exc}"
            return
        except (Exception, SystemExit) as exc:
            # SystemExit too: a plugin calling sys.exit() at import must not close the app.
            log.exception("plugin %s failed to load; skipped", toolset)
            self._plugin_problems[toolset] = f"it failed to load ({type(exc).__name__}: {exc})"
            return
        self._plugin_modules[toolset] = module
        self._pending_plugins.pop(toolset, None)

    def _unload_plugin(self, toolset: str) -> None:
        for spec in [s for s in self._tools.values() if s.toolset == toolset]:
            self.deregister(spec.name)
        module = self._plugin_modules.pop(toolset, None)
        if module is not None:
            # Switched on again later, the already imported module is reused, not re-run.
            self._pending_plugins[toolset] = lambda: module


# --- the process-wide registry and its module-level API --------------------------------

_REGISTRY = Registry()


def builtin_modules() -> list[ModuleType]:
    """The conversational tools in tools/builtin/, imported by name (never from a string)."""
    from companion.tools.builtin import (  # noqa: F401  (the list below is the registration)
        activate_tools,
        cancel_work,
        get_time,
        memory_recall,
        memory_write,
        reminder,
        start_work,
        todo,
        use_tools,
        web_extract,
        web_search,
    )

    return [get_time, todo, memory_write, memory_recall, start_work, cancel_work, web_extract,
            web_search, reminder, activate_tools, use_tools]


def action_modules() -> list[ModuleType]:
    """The acting tools listed in tools/action/__init__.py's ACTION_TOOLS.

    An import failure here propagates: she refuses to start with half a toolset.
    """
    from companion.tools.action import ACTION_TOOLS

    return list(ACTION_TOOLS)


def discover(*, plugin_dir: Path | None = None, disabled: Iterable[str] = (),
             enabled_plugins: Iterable[str] = ()) -> Registry:
    """(Re)build the process-wide registry: built-ins, action tools, then the plugins the user
    enabled (the others are only listed)."""
    global _REGISTRY
    fresh = Registry()
    for toolset in disabled:
        fresh.set_toolset_enabled(toolset, False)
    fresh.register_modules(builtin_modules())
    fresh.register_modules(action_modules())
    fresh.discover_plugins(plugin_dir, enabled=enabled_plugins)
    _REGISTRY = fresh
    return fresh


def current() -> Registry:
    return _REGISTRY


def register(spec: ToolSpec, *, allow_override: bool = False) -> None:
    _REGISTRY.register(spec, allow_override=allow_override)


def deregister(name: str) -> None:
    _REGISTRY.deregister(name)


def registry() -> dict[str, ToolSpec]:
    return _REGISTRY.tools()


def dispatchable(name: str) -> ToolSpec | None:
    return _REGISTRY.dispatchable(name)


def schemas_for(mode: str, *, exclude: Iterable[str] = (), opened: Sequence[str] = ()) -> list[dict[str, Any]]:
    return _REGISTRY.schemas_for(mode, exclude=exclude, opened=opened)


def set_toolset_enabled(name: str, on: bool) -> None:
    _REGISTRY.set_toolset_enabled(name, on)


def disabled_toolsets() -> frozenset[str]:
    return _REGISTRY.disabled_toolsets()


def all_toolsets() -> dict[str, list[str]]:
    return _REGISTRY.all_toolsets()
