"""The package's layers, checked from its source: no module imports a higher layer, and no import cycle.

Every ``import`` counts, at the top of a module, inside a function or under ``TYPE_CHECKING``: an
import moved into a function to dodge a cycle is still the same dependency. The layers, bottom to top,
are the ones docs/architecture.md draws; run this file to check a change against them::

    python -m pytest tests/test_layers.py
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "localeval"

#: Bottom to top. A module may import its own layer and those below it. ``localeval`` itself
#: (its ``__init__``: the public names, imported on first use) stands above them all.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("errors", "files", "paths", "resources", "distribution", "stats", "inflight")),
    ("backends", ("backends",)),
    ("data", ("data",)),
    ("metrics", ("metrics", "prompts")),
    ("targets and synthesizer", ("targets", "synthesizer")),
    ("configuration", ("config", "judge", "plugins")),
    ("run", ("run",)),
    ("reports", ("reports",)),
    ("meta-eval", ("metaeval",)),
    ("viewer", ("viewer",)),
    ("python api", ("api",)),
    ("cli", ("cli", "__main__")),
    ("testing", ("testing",)),
    ("integrations", ("integrations",)),
]


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    found = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: Mapping[str, Path]) -> Iterator[str]:
    """The package's modules that ``name`` imports, anywhere in its source."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = name.split(".") if is_package else name.split(".")[:-1]
                base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
            # ``from localeval.cli import arena`` imports the module localeval.cli.arena
            targets = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            module = _owner(target, known)
            if module and module != name:
                yield module


def _owner(dotted: str, known: Mapping[str, Path]) -> str | None:
    while dotted and dotted not in known:
        dotted = dotted.rpartition(".")[0]
    return dotted or None


def layer_of(module: str) -> int | None:
    if module == "localeval":
        return len(LAYERS)
    first = module.split(".")[1]
    return next((i for i, (_, tops) in enumerate(LAYERS) if first in tops), None)


def graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    known = modules(package)
    return {name: set(imports(name, path, known)) for name, path in known.items()}


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_every_module_belongs_to_a_layer() -> None:
    assert [m for m in modules() if layer_of(m) is None] == []


def test_no_module_imports_a_higher_layer() -> None:
    upward = [
        f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"  # type: ignore[index]
        for module, targets in graph().items() if module != "localeval"
        for target in sorted(targets)
        if target != "localeval" and layer_of(target) > layer_of(module)  # type: ignore[operator]
    ]
    assert upward == []


def test_no_module_imports_the_package_root() -> None:
    """``localeval/__init__`` names the public API for users; the library imports where names live."""
    assert sorted(m for m, targets in graph().items() if "localeval" in targets and m != "localeval") == []


def test_there_is_no_import_cycle() -> None:
    assert cycles(graph()) == []


@pytest.mark.parametrize(("edges", "expected"), [
    ({"a": {"b"}, "b": {"a"}, "c": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}}, [["a", "b", "c"]]),
])
def test_cycles_are_found(edges: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert cycles(edges) == expected


def test_an_import_inside_a_function_counts(tmp_path: Path) -> None:
    package = tmp_path / "localeval"
    (package / "run").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "run" / "__init__.py").write_text("")
    (package / "errors.py").write_text("def f():\n    from localeval.run import runner\n")
    (package / "run" / "runner.py").write_text("from localeval.errors import f\n")
    edges = graph(package)
    assert edges["localeval.errors"] == {"localeval.run.runner"}
    assert cycles(edges) == [["localeval.errors", "localeval.run.runner"]]
