"""The import rules of ARCHITECTURE.md, enforced: which package may import which, no cycles, no training stack on
the runtime path, and a command line that loads nothing heavy before a command runs.

The rules are read from the source with `ast` (every import, at module level or inside a function), so a lazy
import inside a function breaks a rule as surely as one at the top of a file.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Top-level folder -> the import name it is mapped to in pyproject.toml.
PACKAGES = {
    "cli": "eqsearch",
    "engine": "eqsearch.engine",
    "ingest": "eqsearch.ingest",
    "evaluation": "eqsearch.evaluation",
    "training": "eqsearch.training",
    "export": "eqsearch.export",
    "webui": "eqsearch.webui",
}

# What each package may import of eqsearch (ARCHITECTURE.md, "What each package may import").
ALLOWED = {
    "engine": {"engine"},
    "ingest": {"engine", "ingest"},
    "evaluation": {"engine", "ingest", "evaluation"},
    "training": {"engine", "ingest", "evaluation", "training"},
    "export": {"engine", "training", "export"},
    "webui": {"engine", "ingest", "webui"},
    "cli": set(PACKAGES),
}

# Third-party packages a package must never import, not even lazily. ``wordllama`` ships the text encoder's files,
# which `engine.model.text` reads from disk: its loader can download from a model hub, so it is never imported.
FORBIDDEN = {
    "engine": {"torch", "torch_geometric", "onnx", "flask", "werkzeug", "jinja2", "wordllama"},
    "ingest": {"torch", "torch_geometric", "onnx", "flask", "werkzeug", "jinja2", "wordllama"},
    "evaluation": {"torch", "torch_geometric", "onnx", "flask"},
    "training": {"flask"},
    "export": {"flask"},
    "webui": {"torch", "torch_geometric", "onnx"},
}

# Inside engine/: each subpackage and what it may use of the others (the shared root modules errors.py and
# checksums.py are open to all). The order is the build order: nothing points back up.
ENGINE_LAYERS = {
    "es": set(),
    "latex": set(),
    "model": set(),
    "index": {"es", "model"},
    "search": {"index", "model", "latex"},
}


def _modules() -> list[tuple[str, Path]]:
    found = []
    for folder in PACKAGES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "node_modules" not in path.parts:
                found.append((folder, path))
    return found


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every absolute module name imported by a file, with its line (``from a import b`` yields ``a.b`` too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append((node.lineno, node.module))
            names.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
    return names


def _package_of(module: str) -> str | None:
    """The top-level folder an eqsearch module lives in (None for third-party modules and for the root package,
    which holds only ``__version__``, open to all)."""
    if module in ("eqsearch", "eqsearch.__version__") or not module.startswith("eqsearch."):
        return None
    second = module.split(".")[1]
    for folder, name in PACKAGES.items():
        if name == f"eqsearch.{second}":
            return folder
    return "cli"  # eqsearch.main, eqsearch.commands: the console script's own modules


def test_every_package_imports_only_what_architecture_allows() -> None:
    wrong = []
    for folder, path in _modules():
        for line, module in _imports(path):
            top = module.split(".")[0]
            if top in FORBIDDEN.get(folder, set()):
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {module} ({folder} must not)")
            target = _package_of(module)
            if target is not None and target not in ALLOWED[folder]:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {module} ({folder} may not import {target})")
    assert not wrong, "\n".join(wrong)


def test_engine_subpackages_follow_their_layers() -> None:
    wrong = []
    for folder, path in _modules():
        if folder != "engine":
            continue
        parts = path.relative_to(ROOT / "engine").parts
        own = parts[0] if len(parts) > 1 else None  # None: a shared root module (errors.py, checksums.py)
        for line, module in _imports(path):
            if not module.startswith("eqsearch.engine."):
                continue
            target = module.split(".")[2]
            if target not in ENGINE_LAYERS or target == own:
                continue
            if own is None:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: a shared engine module imports {module}")
            elif own in ENGINE_LAYERS and target not in ENGINE_LAYERS[own]:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: engine.{own} may not import engine.{target}")
    assert not wrong, "\n".join(wrong)


def test_the_allowed_package_graph_has_no_cycles() -> None:
    """The rules themselves form a DAG (the two tests above keep the code inside them)."""
    graphs = [
        {pkg: deps - {pkg} for pkg, deps in ALLOWED.items() if pkg != "cli"},
        ENGINE_LAYERS,
    ]
    for graph in graphs:
        done: set[str] = set()

        def visit(node: str, path: tuple[str, ...], graph: dict[str, set[str]] = graph, done: set[str] = done) -> None:
            assert node not in path, f"cycle: {' -> '.join((*path, node))}"
            if node in done:
                return
            for dep in graph.get(node, set()):
                visit(dep, (*path, node))
            done.add(node)

        for node in graph:
            visit(node, ())


def test_the_architecture_document_states_the_rules_this_test_enforces() -> None:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    for folder in PACKAGES:
        assert f"`{folder}/`" in text, f"ARCHITECTURE.md does not describe {folder}/"
    for layer in ENGINE_LAYERS:
        assert f"`engine/{layer}/`" in text, f"ARCHITECTURE.md does not describe engine/{layer}/"


def _loaded_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"import sys\n{code}\nprint(' '.join(sorted(m.split('.')[0] for m in sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    return set(out.split())


@pytest.mark.parametrize(
    "package",
    ["eqsearch.engine", "eqsearch.ingest", "eqsearch.evaluation", "eqsearch.webui"],
)
def test_the_runtime_packages_load_no_training_stack(package: str) -> None:
    """Importing every module of a runtime package in a fresh interpreter never loads torch."""
    folder = next(f for f, name in PACKAGES.items() if name == package)
    modules = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        if "node_modules" in path.parts:
            continue
        rel = path.relative_to(ROOT / folder).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        modules.append(".".join([package, *parts]))
    code = "\n".join(f"import {m}" for m in modules)
    loaded = _loaded_after(code)
    assert not loaded & {"torch", "torch_geometric", "onnx"}, f"{package} loaded {loaded & {'torch', 'onnx'}}"


def test_the_command_line_parser_loads_nothing_heavy() -> None:
    """`eqsearch --help` builds every command's parser; the libraries load only when a command runs."""
    loaded = _loaded_after("from eqsearch.main import build_parser\nbuild_parser()")
    heavy = {"torch", "numpy", "onnxruntime", "elasticsearch", "flask", "lxml"}
    assert not loaded & heavy, f"building the parser loaded {sorted(loaded & heavy)}"
