"""The package layout (issue 13): the flow of a check is the order of the folders.

An ``ast`` walk of ``src/gradcheck`` (every import, at module level or inside a function)
checks three rules:

1. **Ranks.** Each module belongs to a unit (a folder of ``src/gradcheck``, or a top-level
   module) and each unit has a rank, in the order a check flows (``RANKS``). A module
   imports only from its own unit and from units of a lower rank; units of the same rank
   (the features) do not import each other, except the edges in ``ALLOWED_EDGES``.
2. **No cycle** among gradcheck's modules, function-level imports included.
3. **Function-level imports** only of the heavy modules in ``HEAVY`` (each with the reason it
   is heavy), and ``importlib.import_module`` only in the modules of ``DYNAMIC`` (the lazy
   hooks, each with its reason). Standard-library imports are free.

4. **Faces.** A unit is entered through its package's ``__init__``: no module imports another
   unit's private module (``gradcheck._screen._api`` from ``_models``) or a private name of it
   (``_forget`` from ``gradcheck._evaluate.executor``). No exception is left (issue 26: the
   last ones, the orders', the backends' and the exact arithmetic's, now go through the faces).

The checker is run on the package and, to show it is not vacuous, on small trees in
``tmp_path`` with one violation planted in each.
"""
from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "gradcheck"

#: Units in the order a check flows: a unit may import only from units of a lower rank.
RANKS: dict[str, int] = {
    "_core": 0, "_version": 0,                      # vocabulary: errors, config, verdicts, formats
    "_kernels": 0,                                  # the compiled C kernels (cffi extension)
    "mp": 1, "dual": 1,                             # independent oracles: arbitrary precision, dual numbers
    "backends": 2, "native": 2,                     # 1 adapt f (native: C functions through cffi)
    "_evaluate": 3,                                 # 2 the evaluation layer: points in, reduced values out
    "_differences": 4,                              # 2 the entry-wise point generator, difference arithmetic
    "_runtime": 4,                                  # checkpoint and progress around the differences
    "_classify": 5,                                 # 3 classify
    "_refine": 6,                                   # 4 refine
    "_adjudicate": 7,                               # 5 adjudicate
    "_report": 8,                                   # 6 report
    "_axes": 9,                                     # independent axes: declare, verify, colour, the slice referee
    "_lowp": 9,                                     # low precision: check's plan, dispute (a result that renders)
    "_pipeline": 10,                                # check(): the stages wired together
    "_models": 11, "_sweeps": 11, "_screen": 11, "_orders": 11,  # features
    "_controls": 12,                                # the negative controls (every kind of check)
    "examples": 13, "subjects": 13,                 # public subjects
    "engines": 13,                                  # the public face of the evaluation layer
    "": 14,                                         # the package root: the public names
    "_demo": 15,                                    # gradcheck demo / bench
    "_cli": 15,                                     # the command line's helpers (loading, help, pipe, dispute files)
    "cli": 16, "pytest_plugin": 16,                 # entry points
    "__main__": 17,                                 # python -m gradcheck
}
#: Imports between units of the same rank that the code needs, with the reason.
ALLOWED_EDGES: dict[tuple[str, str], str] = {
    ("_models", "_screen"): "check_params(screen=True) screens each named tensor",
}
#: Modules a function may import (they are heavy at import time), with the reason.
HEAVY: dict[str, str] = {
    "numba": "compiles kernels; imported on first use (gradcheck._core.jit)",
    "llvmlite": "numba's backend",
    "mpmath": "arbitrary precision; the referee and disputes only",
    "gmpy2": "mpmath's fast backend",
    "matplotlib": "an optional extra (plots)",
    "torch": "an optional framework",
    "jax": "an optional framework",
    "jaxlib": "an optional framework",
    "dask": "an optional cluster",
    "distributed": "an optional cluster",
    "ml_dtypes": "bfloat16 arrays; imported when one is made",
    "cloudpickle": "ships f to an executor",
    "scipy": "optional",
    "nbclient": "optional (notebook test helper)",
    "gradcheck.mp": "imports mpmath when imported",
    "gradcheck._kernels": "the cffi extension (imports cffi)",
    "gradcheck.backends._jax": "imports jax when imported",
    "gradcheck.backends._torch": "imports torch when imported",
    "gradcheck.backends._jax_model": "imports jax when imported (check_params of a jax pytree)",
    "gradcheck.backends._torch_model": "imports torch when imported (check_params of a torch model)",
}
#: Modules that import other modules by name at run time, with the reason.
DYNAMIC: dict[str, str] = {
    "gradcheck.backends": "the torch and jax model adapters, and jax's x64 switch, load when asked for",
    "gradcheck.backends._registry": "the torch, jax and dual adapters load when their backend is asked for",
    "gradcheck._report.html": "a result's renderer is found by the result's type name (html imports no feature)",
    "gradcheck._cli.common": "MODULE:FUNC given on the command line (cli.py's loader)",
    "gradcheck._demo.bench": "the benchmark scripts of a checkout",
}


@dataclass(frozen=True)
class Edge:
    source: str       # importing module
    target: str       # imported module (resolved; a package's __init__ is the package)
    lineno: int
    in_function: bool
    names: tuple[str, ...] = ()   # the names imported from ``target`` (not submodules)


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def extensions(root: Path) -> set[str]:
    """The compiled extension modules of the package: those its cffi build scripts name
    (``set_source("gradcheck._kernels", ...)``) and any built ``*.so`` beside the sources.
    A clean checkout installed with ``pip install .`` has no ``.so`` under ``src``: the
    build script is what says the module exists."""
    pkg = root.name
    found = {f"{pkg}.{p.name.split('.')[0]}" for p in root.glob("*.so")}
    scripts = root.parents[1] / "kernels"
    for script in sorted(scripts.glob("*.py")) if scripts.is_dir() else []:
        for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "set_source" and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and str(node.args[0].value).startswith(pkg + ".")):
                found.add(str(node.args[0].value))
    return found


def walk(root: Path) -> tuple[set[str], list[Edge], list[tuple[str, int]]]:
    """Every module of the package at ``root``, every import edge, and every call of
    ``importlib.import_module`` (module, line)."""
    files = sorted(root.rglob("*.py"))
    modules = {module_name(p, root) for p in files}
    modules |= extensions(root)
    edges, dynamic = [], []
    for path in files:
        name = module_name(path, root)
        is_pkg = path.name == "__init__.py"
        base = name.split(".") if is_pkg else name.split(".")[:-1]

        def visit(node: ast.AST, in_function: bool, name: str = name, base: list[str] = base) -> None:
            for child in ast.iter_child_nodes(node):
                inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                if isinstance(child, ast.Import):
                    for alias in child.names:
                        edges.append(Edge(name, alias.name, child.lineno, in_function))
                elif isinstance(child, ast.ImportFrom):
                    if child.level:
                        up = base[: len(base) - (child.level - 1)] if child.level > 1 else base
                        target = ".".join(up + ([child.module] if child.module else []))
                    else:
                        target = child.module or ""
                    for alias in child.names:  # `from pkg import module` imports the module
                        sub = f"{target}.{alias.name}"
                        edges.append(Edge(name, sub, child.lineno, in_function) if sub in modules
                                     else Edge(name, target, child.lineno, in_function, (alias.name,)))
                elif (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)
                      and child.func.attr == "import_module"):
                    dynamic.append((name, child.lineno))
                visit(child, inner)

        visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), False)
    return modules, edges, dynamic


def unit_of(module: str) -> str:
    """``gradcheck._refine.study`` -> ``_refine``; ``gradcheck`` (the root) -> ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _heavy(target: str) -> bool:
    return any(target == h or target.startswith(h + ".") for h in HEAVY)


def _stdlib(target: str) -> bool:
    return target.split(".")[0] in sys.stdlib_module_names


def _private_reach(e: Edge) -> list[str]:
    """Rule 4 for one import between two units: a private module of the other unit, or a
    private name from one of its modules (dunder names are not private)."""
    inner = e.target.split(".")[2:]  # below the unit: gradcheck.UNIT.<inner>
    if any(part.startswith("_") for part in inner):
        return [f"{e.source}:{e.lineno}: imports {e.target}, a private module of "
                f"{'.'.join(e.target.split('.')[:2])}: enter it through its __init__"]
    hidden = [n for n in e.names if n.startswith("_") and not n.startswith("__")]
    if hidden:
        return [f"{e.source}:{e.lineno}: imports the private name(s) {hidden} of {e.target}"]
    return []


def violations(root: Path, ranks: dict[str, int] = RANKS) -> list[str]:
    """Every breach of the four rules in the package at ``root`` (empty: the layout holds)."""
    pkg = root.name
    modules, edges, dynamic = walk(root)
    found = []
    for e in edges:
        own = e.target == pkg or e.target.startswith(pkg + ".")
        if e.in_function and not _heavy(e.target) and not _stdlib(e.target):
            found.append(f"{e.source}:{e.lineno}: imports {e.target} inside a function "
                         "(allowed only for the heavy modules in HEAVY)")
        if not own or e.target not in modules:
            continue
        src, dst = unit_of(e.source), unit_of(e.target)
        if src == dst:
            continue
        if src not in ranks or dst not in ranks:
            found.append(f"{e.source}: unit {src if src not in ranks else dst!r} has no rank in RANKS")
            continue
        if ranks[dst] > ranks[src]:
            found.append(f"{e.source}:{e.lineno}: imports {e.target}, a later stage "
                         f"({dst or 'the root'} ranks {ranks[dst]}, {src or 'the root'} {ranks[src]})")
        elif ranks[dst] == ranks[src] and (src, dst) not in ALLOWED_EDGES:
            found.append(f"{e.source}:{e.lineno}: imports {e.target}: {src} and {dst} are peers "
                         "(same rank) that must not know each other")
        found += _private_reach(e)
    found += [f"{m}:{line}: importlib.import_module outside DYNAMIC" for m, line in dynamic if m not in DYNAMIC]
    found += [f"import cycle: {' -> '.join(c)}" for c in cycles(modules, edges)]
    return found


def cycles(modules: set[str], edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each as a path."""
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for e in edges:
        if e.target in modules and e.target != e.source:
            graph[e.source].add(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
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
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return out


def test_the_package_keeps_its_layout():
    """No module of gradcheck imports a later stage or a peer feature, no import cycle,
    no function-level import but of a heavy module, no dynamic import but the listed hooks."""
    assert violations(PACKAGE) == []


def test_every_unit_has_a_rank():
    """Each folder and top-level module of the package is placed in the flow (a new folder
    must be given a rank, not slip past the check)."""
    modules, _, _ = walk(PACKAGE)
    assert {unit_of(m) for m in modules} - set(RANKS) == set()


def test_heavy_allow_list_is_used():
    """Every HEAVY entry of gradcheck's own is a real module (a stale entry would widen the rule)."""
    modules, _, _ = walk(PACKAGE)
    own = [h for h in HEAVY if h.startswith("gradcheck.")]
    assert [h for h in own if h not in modules] == []


# -- the checker is not vacuous: one planted violation per rule -------------------------
def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "gradcheck"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for folder in {p.parent for p in root.rglob("*.py")}:
        (folder / "__init__.py").touch()
    return root


CLEAN = {
    "_core/errors.py": "class GradcheckError(Exception):\n    pass\n",
    "_classify/rule.py": "from .._core.errors import GradcheckError\n",
    "_classify/_inner.py": "x = 1\n",
    "_report/report.py": "from .._classify import rule\n",
    "_pipeline/check.py": "import json\n\nfrom .._report.report import rule\n\n\ndef f():\n    import mpmath\n",
}


def test_a_clean_tree_passes(tmp_path):
    """The planted trees below differ from this one by one line: it has no violation."""
    assert violations(_tree(tmp_path, CLEAN)) == []


PLANTED = [  # (file, line added to it, what the checker must say)
    ("_classify/kernel.py", "from .._report.report import rule\n", "a later stage"),
    ("_classify/kernel.py", "def f():\n    from .._report import report\n", "a later stage"),
    ("_models/params.py", "from .._sweeps import sweep\n", "peers"),
    ("_core/config.py", "def f():\n    from . import errors\n", "inside a function"),
    ("_core/config.py", "def f():\n    import numpy\n", "inside a function"),
    ("_core/config.py", "import importlib\n\nM = importlib.import_module('json')\n", "import_module"),
    ("_core/errors.py", "from . import config\n", "import cycle"),
    ("_report/report.py", "from .._classify.rule import _private\n", "private name"),
    ("_report/report.py", "from .._classify._inner import x\n", "private module"),
]


@pytest.mark.parametrize("rel, text, expected", PLANTED, ids=[p[2] + f" ({p[0]})" for p in PLANTED])
def test_a_planted_violation_is_found(tmp_path, rel, text, expected):
    """Each rule fails on a tree that breaks it once: an import of a later stage (also from
    inside a function), of a peer feature, a function-level import of gradcheck's own module
    or of a light package, a dynamic import, a cycle between two modules."""
    files = dict(CLEAN, **{"_core/config.py": "from .errors import GradcheckError\n",
                           "_models/params.py": "X = 1\n", "_sweeps/sweep.py": "X = 1\n"})
    root = _tree(tmp_path / "clean", files)
    assert violations(root) == []
    files[rel] = files.get(rel, "") + text
    found = violations(_tree(tmp_path / "planted", files))
    assert any(expected in v for v in found), found
