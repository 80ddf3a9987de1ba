"""The house in numbers (issue 22): what a newcomer meets before reading a line.

    python -m bench.house [--tree DIR] [--picture]

Prints, for this checkout: the import cycles among the modules of
``curfew_core`` and ``curfew_testkit`` (strongly connected groups of grimp's
import graph), the imports made inside functions (the usual way to hide a
cycle), the modules at the ``curfew_core/`` root, and the README's length.
Imports that run against the layers are ``lint-imports``' to count (its
layers contract over every child of ``curfew_core``, ``.importlinter``); the
suite holds both at zero (``tests/test_import_contracts.py``).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("curfew_core", "curfew_testkit")


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every group of two or more modules that import each other, round about."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(module: str) -> None:
        nonlocal counter
        index[module] = low[module] = counter
        counter += 1
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def local_imports() -> list[str]:
    """``file:line`` of each import of the project made inside a function
    (``TYPE_CHECKING`` blocks are not imports at run time)."""
    out = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for function in ast.walk(tree):
                if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for node in ast.walk(function):
                    names = []
                    if isinstance(node, ast.ImportFrom) and node.module:
                        names = [node.module]
                    elif isinstance(node, ast.Import):
                        names = [alias.name for alias in node.names]
                    if any(name.split(".")[0] in PACKAGES for name in names):
                        out.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return out


def picture(graph: grimp.ImportGraph, root: Path) -> str:
    """``curfew_core``'s children and the imports between them, as Mermaid."""
    top = "curfew_core"

    def child(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if parts[0] == top and len(parts) > 1 else None

    lines: dict[str, int] = {}
    for path in (root / top).rglob("*.py"):
        part = path.relative_to(root / top).parts[0].removesuffix(".py")
        if part in ("__init__", "migrations"):
            continue
        lines[part] = lines.get(part, 0) + len(path.read_text(encoding="utf-8").splitlines())
    arrows: set[tuple[str, str]] = set()
    for module in graph.modules:
        source = child(module)
        if source not in lines:
            continue
        for imported in graph.find_modules_directly_imported_by(module):
            target = child(imported)
            if target in lines and target != source:
                arrows.add((source, target))
    floors = layers(root)
    floor_of = {name: index for index, floor in enumerate(floors) for name in floor}
    out = ["```mermaid", "flowchart TB"]
    placed: set[str] = set()
    for index, floor in enumerate(floors):
        names = [name for name in floor if name in lines]
        if not names:
            continue
        out.append(f'  subgraph floor{index}["floor {len(floors) - index}"]')
        out += [f'    {name}["{name} ({lines[name]:,})"]' for name in names]
        out.append("  end")
        placed.update(names)
    out += [
        f'  {name}["{name} ({count:,})"]'
        for name, count in sorted(lines.items())
        if name not in placed
    ]
    up = []
    for number, (source, target) in enumerate(sorted(arrows)):
        out.append(f"  {source} --> {target}")
        if floor_of.get(target, len(floors)) < floor_of.get(source, len(floors)):
            up.append(number)
    if up:
        out.append(f"  linkStyle {','.join(map(str, up))} stroke:red")
    out.append("```")
    out.append(f"{len(lines)} rooms, {len(arrows)} arrows, {len(up)} running back up a floor.")
    return "\n".join(out)


def layers(root: Path) -> list[list[str]]:
    """The floors of ``.importlinter``'s layers contract, top first (each a
    list of the children of ``curfew_core`` on it)."""
    floors: list[list[str]] = []
    contract = inside = False
    for line in (root / ".importlinter").read_text(encoding="utf-8").splitlines():
        if line.startswith("["):
            contract = line.startswith("[importlinter:contract:layers]")
            inside = False
        elif contract and line.startswith("layers ="):
            inside = True
        elif inside and not line.startswith(" "):
            inside = False
        elif inside and not line.strip().startswith("#"):
            floors.append([name.strip() for name in re.split(r"[|:]", line)])
    return floors


def main() -> int:
    global ROOT
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout to read")
    parser.add_argument("--picture", action="store_true", help="draw the house as Mermaid")
    args = parser.parse_args()
    ROOT = args.tree.resolve()
    sys.path.insert(0, str(ROOT))
    graph = grimp.build_graph(*PACKAGES)
    if args.picture:
        print(picture(graph, ROOT))
        return 0
    found = cycles(graph)
    local = local_imports()
    root = sorted(
        module
        for module in graph.modules
        if module.count(".") == 1
        and module.startswith("curfew_core.")
        and not graph.find_children(module)
    )
    readme = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    print(f"import cycles: {len(found)}" + "".join(f"\n  {' -> '.join(g)}" for g in found))
    print(f"imports inside functions: {len(local)}" + "".join(f"\n  {line}" for line in local))
    print(f"modules at the curfew_core/ root: {len(root)} ({', '.join(root)})")
    print(f"README.md: {readme} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
