"""The layout's two rules, read from the source (no database): the core never imports a
particular kind, and no modules import each other in a circle. Function-level imports
count: a lazy import is still an arrow a reader has to follow."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KINDS_PACKAGE = "annotation.kinds"
# Modules of kinds/ that belong to no kind: the interface and the list.
KINDS_CORE = {"annotation.kinds", "annotation.kinds.base", "annotation.kinds.registry"}


def _module_files() -> dict[str, Path]:
    modules = {}
    for top in ("annotation", "api", "config"):
        for path in (ROOT / top).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    return modules


MODULES = _module_files()


def _imports_of(name: str, path: Path) -> set[str]:
    """The project modules `name` imports anywhere in its source ("from a import b" counts as
    a.b when that is a module, else as a)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if candidate in MODULES else base)
    return {module for module in found if module in MODULES and module != name}


GRAPH = {name: _imports_of(name, path) for name, path in MODULES.items()}


def _kind_of(module: str) -> str | None:
    """The kind package a module belongs to (annotation.kinds.<kind>), None for the core."""
    if not module.startswith(KINDS_PACKAGE + ".") or module in KINDS_CORE:
        return None
    return ".".join(module.split(".")[:3])


def _circles() -> list[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    for start in GRAPH:
        if start in index:
            continue
        work = [(start, iter(sorted(GRAPH[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(GRAPH[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(frozenset(component))
    return circles


def test_the_core_imports_no_particular_kind():
    offenders = {
        module: sorted(target for target in GRAPH[module] if _kind_of(target))
        for module in GRAPH
        if _kind_of(module) is None
    }
    assert {module: targets for module, targets in offenders.items() if targets} == {}


def test_no_modules_import_each_other_in_a_circle():
    assert _circles() == []


def test_the_graph_sees_lazy_and_relative_imports():
    """The reader itself: a function-level import and a relative import are both arrows."""
    assert "annotation.services.imports" in GRAPH["annotation.tasks"]  # inside _handlers()
    assert "annotation.kinds.base" in GRAPH["annotation.kinds.registry"]  # from .base import
    assert _kind_of("annotation.kinds.qa.formats") == "annotation.kinds.qa"
    assert _kind_of("annotation.kinds.registry") is None
