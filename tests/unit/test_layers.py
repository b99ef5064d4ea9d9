"""The house: imports point one way (README, Development), and no modules import each other in a
circle. Read statically from the source, every import statement counted (also those inside
functions and under TYPE_CHECKING): a circle that only type hints close is still a circle."""

from __future__ import annotations

import ast
from pathlib import Path

import heartbeat

ROOT = Path(heartbeat.__file__).parent

# each layer may import only the layers after it in this list (and itself)
LAYERS = [
    ("__main__", "cli"),
    ("mcp_server", "serve", "web", "compat"),
    ("mcp_http",),  # hb mcp --http's protocol, loaded by mcp_server only for --http
    ("ledger",),
    ("ops",),
    ("context",),
    ("reporting",),
    ("db",),
    ("settings", "progress"),
    # pure: text and time in, values out
    ("clock",),  # the clock: resolves a wall time with rules.wallclock, reads one with formats
    ("rules",),  # decisions of (state, now)
    ("formats",),  # parsers and renderers of each file (the Repeat grammar included)
    ("errors", "bulk"),
]


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module(p): p for p in ROOT.rglob("*.py")}


def _imports(name: str) -> set[str]:
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:  # a submodule by name, else a name the module defines
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
    # ``heartbeat`` itself is the package's face: ``__version__`` and a lazy ``Ledger``; taking
    # the version from it ties nothing
    return {m for m in found if m in MODULES and m not in (name, "heartbeat")}


GRAPH = {name: _imports(name) for name in MODULES}


def _layer(name: str) -> int:
    if name == "heartbeat":
        return 0  # the face: hands out the Ledger
    top = name.split(".")[1]
    for index, names in enumerate(LAYERS):
        if top in names:
            return index
    raise AssertionError(f"{name}: in no layer of the house; add it to LAYERS and the README")


def test_every_module_has_a_layer() -> None:
    for name in MODULES:
        _layer(name)


def test_imports_point_down() -> None:
    upward = sorted(
        f"{name} -> {dep}" for name, deps in GRAPH.items() for dep in deps if _layer(dep) < _layer(name)
    )
    assert upward == []


def test_nothing_below_the_facade_imports_it() -> None:
    users = sorted(
        n
        for n, deps in GRAPH.items()
        if "heartbeat.ledger" in deps and _layer(n) > _layer("heartbeat.ledger")
    )
    assert users == []


def test_formats_and_rules_know_no_database() -> None:
    pure = [n for n in MODULES if n.startswith(("heartbeat.formats", "heartbeat.rules"))]
    assert pure
    leaks = sorted(
        f"{n} -> {d}" for n in pure for d in GRAPH[n] if d.startswith(("heartbeat.db", "heartbeat.context"))
    )
    assert leaks == []


def test_no_circles() -> None:
    """Tarjan's strongly connected components over the import graph: none has two modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w == _package_of(v):
                continue  # a module's own package face (__init__ re-exports) is not a tie
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for name in sorted(MODULES):
        if name not in index:
            visit(name)
    assert circles == []


def _package_of(name: str) -> str:
    return name.rpartition(".")[0]
