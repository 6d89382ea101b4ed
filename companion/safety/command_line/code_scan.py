"""A static look (ast) at Python code before it runs: does it delete, write, spawn, connect or pry?

The findings explain the approval card ("That code deletes files (line 3)") and make the gate
ask even when harmless code has been granted. It is an explanation, not the wall: code can
always hide what it does from a static look, so every program runs in the kernel sandbox
(safety/sandbox/sandbox.py) whatever the scan said.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

__all__ = ["CodeScan", "scan_code"]

DELETES = "deletes files"
WRITES = "writes or changes files"
PROCESSES = "starts other programs"
NETWORK = "opens network connections"
SECRETS = "reads secret files"
DYNAMIC = "builds code or names at run time, so I can't tell what it does"
NATIVE = "loads native code"

_MODULE_FINDINGS = {
    "subprocess": PROCESSES, "multiprocessing": PROCESSES, "pty": PROCESSES, "pexpect": PROCESSES,
    "sh": PROCESSES, "plumbum": PROCESSES,
    "socket": NETWORK, "ssl": NETWORK, "urllib": NETWORK, "http": NETWORK, "requests": NETWORK,
    "httpx": NETWORK, "aiohttp": NETWORK, "ftplib": NETWORK, "smtplib": NETWORK, "poplib": NETWORK,
    "imaplib": NETWORK, "telnetlib": NETWORK, "xmlrpc": NETWORK, "websocket": NETWORK,
    "websockets": NETWORK, "paramiko": NETWORK, "urllib3": NETWORK, "socketserver": NETWORK,
    "asyncssh": NETWORK, "selectors": NETWORK,
    "ctypes": NATIVE, "cffi": NATIVE, "importlib": DYNAMIC, "keyring": SECRETS,
    # Unpickling runs whatever the data names (pickle.loads can call os.system).
    "pickle": DYNAMIC, "_pickle": DYNAMIC, "cPickle": DYNAMIC, "marshal": DYNAMIC, "shelve": DYNAMIC,
    "dill": DYNAMIC, "cloudpickle": DYNAMIC, "copyreg": DYNAMIC, "runpy": DYNAMIC, "code": DYNAMIC,
}
# Other names for the os module's functions.
_OS_ALIASES = frozenset({"os", "posix", "nt"})
# Attribute or function names that say what they do whatever they are called on.
_NAME_FINDINGS = {
    "rmtree": DELETES, "unlink": DELETES, "rmdir": DELETES, "removedirs": DELETES,
    "write_text": WRITES, "write_bytes": WRITES, "touch": WRITES, "rename": WRITES,
    "symlink_to": WRITES, "hardlink_to": WRITES, "chmod": WRITES, "chown": WRITES,
    "lchown": WRITES, "mkdir": WRITES, "makedirs": WRITES, "copyfile": WRITES, "copy2": WRITES,
    "copytree": WRITES, "copymode": WRITES, "to_csv": WRITES, "to_excel": WRITES,
    "to_parquet": WRITES, "to_pickle": WRITES, "savefig": WRITES, "savez": WRITES, "tofile": WRITES,
    "system": PROCESSES, "popen": PROCESSES, "fork": PROCESSES, "forkpty": PROCESSES,
    "posix_spawn": PROCESSES, "posix_spawnp": PROCESSES, "startfile": PROCESSES,
    "create_subprocess_exec": PROCESSES, "create_subprocess_shell": PROCESSES,
    "open_connection": NETWORK, "open_unix_connection": NETWORK, "start_server": NETWORK,
    "create_connection": NETWORK, "urlopen": NETWORK,
}
# Names that only count when called on the os / shutil modules (lists have .remove too).
_MODULE_CALLS = {
    ("os", "remove"): DELETES, ("os", "truncate"): DELETES, ("os", "replace"): WRITES,
    ("os", "link"): WRITES, ("os", "symlink"): WRITES, ("os", "open"): WRITES,
    ("os", "mkfifo"): WRITES, ("os", "mknod"): WRITES, ("os", "putenv"): PROCESSES,
    ("shutil", "move"): WRITES, ("shutil", "copy"): WRITES, ("os", "kill"): PROCESSES,
    ("os", "killpg"): PROCESSES, ("numpy", "save"): WRITES, ("np", "save"): WRITES,
}
_PROCESS_PREFIXES = ("exec", "spawn")  # os.execv, os.spawnl, ...
_DYNAMIC_BUILTINS = {"eval", "exec", "compile", "__import__", "breakpoint", "globals", "vars"}
_SAFE_DUNDERS = {"__name__", "__doc__", "__init__", "__main__", "__dict__", "__class__",
                 "__len__", "__repr__", "__str__", "__eq__", "__hash__", "__iter__", "__next__",
                 "__enter__", "__exit__", "__file__", "__qualname__", "__module__"}
_SECRET_MARKERS = (
    ".ssh", "id_rsa", "id_ed25519", "id_ecdsa", ".env", "/etc/shadow", "/etc/sudoers", ".aws",
    ".gnupg", ".netrc", ".pgpass", ".git-credentials", ".kube/config", ".docker/config",
    "gcloud", "/proc/", "environ", "keyring", ".password-store", "wallet.dat", ".npmrc", ".pypirc",
)


@dataclass(frozen=True)
class CodeScan:
    findings: list[str]
    """Short phrases with line numbers, e.g. "deletes files (line 3)"; empty for harmless code."""
    syntax_error: str | None = None


def scan_code(code: str) -> CodeScan:
    """Read `code` without running it and say what risky things it does."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return CodeScan([], f"line {exc.lineno}: {exc.msg}")
    except (ValueError, MemoryError, RecursionError) as exc:
        return CodeScan([], str(exc) or type(exc).__name__)
    visitor = _Visitor()
    visitor.visit(tree)
    seen: dict[str, int] = {}
    for what, line in visitor.found:
        seen.setdefault(what, line)
    return CodeScan([f"{what} (line {line})" for what, line in seen.items()])


class _Visitor(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found: list[tuple[str, int]] = []
        self.aliases: dict[str, str] = {}  # local name -> module it stands for

    def add(self, what: str, node: ast.AST) -> None:
        self.found.append((what, getattr(node, "lineno", 0)))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            root = alias.name.split(".")[0]
            self.aliases[alias.asname or root] = "os" if root in _OS_ALIASES else root
            if root in _MODULE_FINDINGS:
                self.add(_MODULE_FINDINGS[root], node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        root = (node.module or "").split(".")[0]
        root = "os" if root in _OS_ALIASES else root
        if node.level == 0 and root in _MODULE_FINDINGS:
            self.add(_MODULE_FINDINGS[root], node)
        for alias in node.names:
            name = alias.name
            if name == "*":
                self.add(DYNAMIC, node)
            elif (root, name) in _MODULE_CALLS:
                self.add(_MODULE_CALLS[(root, name)], node)
            elif name in _NAME_FINDINGS:
                self.add(_NAME_FINDINGS[name], node)
            elif root == "os" and name.startswith(_PROCESS_PREFIXES):
                self.add(PROCESSES, node)
            elif name in _DYNAMIC_BUILTINS:
                self.add(DYNAMIC, node)
            self.aliases[alias.asname or name] = f"{root}.{name}"
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            if func.id in _DYNAMIC_BUILTINS:
                self.add(DYNAMIC, node)
            elif func.id == "open" or self.aliases.get(func.id) in ("io.open", "codecs.open", "io.FileIO"):
                self._check_open_mode(node, position=1)
            elif func.id in ("getattr", "setattr", "delattr"):
                name = _constant_name(node, 1)
                if name is None:
                    self.add(DYNAMIC, node)
                elif self._named(name):  # getattr(os, 'system') says what it does
                    self.add(self._named(name), node)
        elif isinstance(func, ast.Attribute):
            module = self.aliases.get(func.value.id, func.value.id) if isinstance(func.value, ast.Name) else ""
            if func.attr in ("open", "FileIO"):
                if module in ("os",) and func.attr == "open":
                    self.add(WRITES, node)
                else:  # io.open(path, mode) or Path(...).open(mode)
                    self._check_open_mode(node, position=1 if module in ("io", "codecs") else 0)
            elif (module, func.attr) in _MODULE_CALLS:
                self.add(_MODULE_CALLS[(module, func.attr)], node)
            elif module == "os" and func.attr.startswith(_PROCESS_PREFIXES):
                self.add(PROCESSES, node)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in _NAME_FINDINGS:
            self.add(_NAME_FINDINGS[node.attr], node)
        elif node.attr.startswith("__") and node.attr not in _SAFE_DUNDERS:
            self.add(DYNAMIC, node)
        elif node.attr == "__dict__" and isinstance(node.value, ast.Name) and node.value.id in self.aliases:
            self.add(DYNAMIC, node)  # os.__dict__['system']: a module's names looked up by string
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        key, table = node.slice, node.value
        looked_up = (isinstance(table, ast.Attribute) and table.attr == "__dict__") or (
            isinstance(table, ast.Call) and isinstance(table.func, ast.Name) and table.func.id in ("vars", "globals"))
        if looked_up and isinstance(key, ast.Constant) and isinstance(key.value, str) and self._named(key.value):
            self.add(self._named(key.value), node)  # vars(os)['system'], os.__dict__['remove']
        self.generic_visit(node)

    @staticmethod
    def _named(name: str) -> str | None:
        """What a function called `name` would do, as far as its name says."""
        if name in _NAME_FINDINGS:
            return _NAME_FINDINGS[name]
        if ("os", name) in _MODULE_CALLS:
            return _MODULE_CALLS[("os", name)]
        if name.startswith(_PROCESS_PREFIXES):
            return PROCESSES
        return None

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in ("__builtins__", "__loader__", "__spec__"):
            self.add(DYNAMIC, node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str | bytes):
            text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
            if any(marker in text for marker in _SECRET_MARKERS):
                self.add(SECRETS, node)

    def _check_open_mode(self, node: ast.Call, position: int) -> None:
        mode: ast.AST | None = node.args[position] if len(node.args) > position else None
        for keyword in node.keywords:
            if keyword.arg == "mode":
                mode = keyword.value
            elif keyword.arg is None:
                mode = keyword.value  # **kwargs: can't tell
        if mode is None:
            return  # read-only text mode
        if not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)) or any(
            ch in mode.value for ch in "wax+"
        ):
            self.add(WRITES, node)


def _constant_name(node: ast.Call, position: int) -> str | None:
    """The attribute name getattr(obj, NAME) is given as a plain constant, else None."""
    if len(node.args) <= position:
        return None
    arg = node.args[position]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and not arg.value.startswith("__"):
        return arg.value
    return None
