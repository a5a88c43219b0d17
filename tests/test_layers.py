"""The house's layering, read from the imports (docs/ARCHITECTURE.md): no import circle
between modules, every import runs down the layers, and no package holds more than a
fifth of the code. Imports inside functions and under TYPE_CHECKING count too."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Lowest first: a package may import only itself and those before it (and the whole of
#: reference). Keep in step with docs/ARCHITECTURE.md.
HARNESS_LAYERS = ("infra", "traffic", "cluster", "nemesis", "client", "scenario", "judge",
                  "run", "search", "differential", "report", "certify", "cli", "pytest_plugin")
REFERENCE_LAYERS = ("releases", "model", "trace", "search")


def modules() -> dict[str, Path]:
    found = {}
    for top in ("harness", "reference"):
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The project modules ``name`` imports (``from p import m`` names module p.m if any)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                       for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: set(imports(name, path, known)) for name, path in known.items()}


def layer(module: str) -> tuple[str, int]:
    parts = module.split(".")
    layers = HARNESS_LAYERS if parts[0] == "harness" else REFERENCE_LAYERS
    if len(parts) < 2:
        return parts[0], len(layers)  # the top package's __init__: above every layer
    assert parts[1] in layers, f"{module}: package {parts[1]} is in no layer of this test"
    return parts[0], layers.index(parts[1])


def test_no_import_circle() -> None:
    deps = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in deps[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                circles.append(sorted(part))

    for v in sorted(deps):
        if v not in index:
            visit(v)
    assert circles == []


def test_every_import_runs_down_the_layers() -> None:
    upward = []
    for module, targets in graph().items():
        top, mine = layer(module)
        for target in targets:
            their_top, theirs = layer(target)
            if top == "reference" and their_top == "harness":
                upward.append(f"{module} -> {target} (reference is pure)")
            elif top == their_top and theirs > mine and len(target.split(".")) > 1 \
                    and len(module.split(".")) > 1:
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_no_package_holds_more_than_a_fifth_of_the_code() -> None:
    lines: dict[str, int] = {}
    for module, path in modules().items():
        package = ".".join(module.split(".")[:2])
        lines[package] = lines.get(package, 0) + len(path.read_text().splitlines())
    total = sum(lines.values())
    assert {p: round(n / total, 3) for p, n in lines.items() if n > total / 5} == {}


def test_no_subcommand_imports_another() -> None:
    """harness/cli: subcommands share options through options.py; only app.py composes."""
    deps = graph()
    shared = {"harness.cli", "harness.cli.options", "harness.cli.app", "harness.cli.__main__"}
    crossing = [f"{m} -> {t}" for m, targets in deps.items() if m.startswith("harness.cli.")
                and m not in shared for t in targets
                if t.startswith("harness.cli.") and t not in shared]
    assert crossing == []
