"""The package's import graph: no cycles, and the layers of docs/design.md.

Imports are read from the source (ast for .py, the import lines of .pyx and
.pxd), imports inside functions included."""
import ast
import re
from pathlib import Path
from typing import Dict, List, Set

PACKAGE = Path(__file__).parents[1] / "spacy_isbn"
# what transitions/ offers every transition system, and so the search may read
SHARED_TRANSITIONS = {"system", "_arena", "inputs", "lexicon", "derivation", "projectivity"}
CYTHON_IMPORT = re.compile(r"^\s*from\s+(\.*)([\w.]*)\s+c?import\s+\(?([\w, ]*)", re.M)


def module_files(root: Path) -> Dict[str, List[Path]]:
    """Dotted module name -> its source files (a .pyx and its .pxd are one module)."""
    mods: Dict[str, List[Path]] = {}
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".pyx", ".pxd"):
            parts = path.relative_to(root.parent).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods.setdefault(".".join(parts), []).append(path)
    return mods


def import_graph(root: Path) -> Dict[str, Set[str]]:
    """Module -> the package's modules it imports (a name imported from a
    package is its submodule if there is one, else the package)."""
    mods = module_files(root)
    packages = {m for m, paths in mods.items() if any(p.stem == "__init__" for p in paths)}

    def resolve(module: str, level: int, target: str, names) -> Set[str]:
        if level:
            parent = module.split(".") if module in packages else module.split(".")[:-1]
            base = ".".join(parent[: len(parent) - level + 1] + ([target] if target else []))
        else:
            base = target
        out = set()
        for name in names or [None]:
            if name and f"{base}.{name}" in mods:
                out.add(f"{base}.{name}")
            elif base in mods:
                out.add(base)
        return out

    graph: Dict[str, Set[str]] = {}
    for module, paths in mods.items():
        edges: Set[str] = set()
        for path in paths:
            source = path.read_text(encoding="utf-8")
            if path.suffix == ".py":
                for node in ast.walk(ast.parse(source)):
                    if isinstance(node, ast.Import):
                        for alias in node.names:
                            edges |= resolve(module, 0, alias.name, None)
                    elif isinstance(node, ast.ImportFrom):
                        edges |= resolve(module, node.level, node.module or "",
                                         [a.name for a in node.names])
            else:
                for dots, target, names in CYTHON_IMPORT.findall(source):
                    edges |= resolve(module, len(dots), target,
                                     [n.strip() for n in names.split(",") if n.strip()])
        # a package importing its own submodules is not a cycle
        graph[module] = {m for m in edges if m != module and not m.startswith(module + ".")}
    return graph


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    found: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_package_has_no_import_cycle():
    graph = import_graph(PACKAGE)
    assert len(graph) > 50 and "spacy_isbn.search.beam" in graph
    assert not cycles(graph), cycles(graph)


def test_the_search_knows_transition_systems_only_through_the_protocol():
    graph = import_graph(PACKAGE)
    shared = {f"spacy_isbn.transitions.{name}" for name in SHARED_TRANSITIONS}
    assert shared <= set(graph)
    bad = {(m, t) for m, targets in graph.items() if m.startswith("spacy_isbn.search.")
           for t in targets if t.startswith("spacy_isbn.transitions.") and t not in shared}
    assert not bad, sorted(bad)


def test_transitions_import_nothing_from_the_model():
    graph = import_graph(PACKAGE)
    bad = {(m, t) for m, targets in graph.items() if m.startswith("spacy_isbn.transitions.")
           for t in targets if t == "spacy_isbn.model" or t.startswith("spacy_isbn.model.")}
    assert not bad, sorted(bad)


def test_a_cycle_is_found(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import a\n")
    (pkg / "a.py").write_text("def f():\n    from .sub.b import g\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("from ..a import f\n")
    (pkg / "sub" / "c.pyx").write_text("from .b cimport x\n")
    graph = import_graph(pkg)
    assert graph["pkg.sub.c"] == {"pkg.sub.b"} and graph["pkg"] == set()
    assert cycles(graph) == [["pkg.a", "pkg.sub.b"]]
