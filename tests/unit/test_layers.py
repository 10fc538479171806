"""The package's layers, written once as data, and the rules the imports must follow: no cycle among
the project's modules (imports inside functions and under TYPE_CHECKING count), no import that goes
up a layer or sideways into another package of the same layer, Streamlit only in the app, and no
library module over 500 lines, no function over 60, no page over 150."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "transformer_viz"

# Bottom to top. A module may import its own package and any package of a lower layer; the packages
# that share a layer are independent of each other (the app and the command line are both clients of
# the library and neither imports the other).
LAYERS: tuple[tuple[str, ...], ...] = (
    # core: the recorder, masks, config base, special tokens; fenced: private internals
    ("core", "fenced"),
    ("plots",),  # pure figures: numpy and plotly in, a Figure out
    ("models",),  # the model families, their configs and trace names, the registry
    ("text",),  # tokenizer, corpora, input checks, analysis
    ("generation",),  # decoding and its defaults, sampling, the KV cache, completion, evaluation
    ("interpret",),  # experiments on the forward pass's hooks: heads off, the lens, attributions
    ("vision",),  # the digits and the canvases: data and scoring
    ("checkpoints",),  # the file format, loading through the registry, saving, cards
    ("interop",),  # transformers export, CTranslate2
    ("training",),  # losses' use, schedules, one trainer per family
    ("engine",),  # one sentence through a loaded model, traced
    ("views",),  # a run and options -> a figure spec (plot, arguments, CSV data), for every client
    # the clients (notebook: the figures in Jupyter, transformer_viz/notebook.py)
    ("app", "cli", "notebook"),
)
LAYER_OF = {package: rank for rank, packages in enumerate(LAYERS) for package in packages}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(module: str) -> str:
    """The layer package a module belongs to: transformer_viz.text.tokenizer -> "text"; __main__ is
    the CLI's."""
    part = module.split(".")[1] if "." in module else ""
    return "cli" if part == "__main__" else part


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(path: Path, module: str) -> set[str]:
    """Every module name an import in the file refers to, wherever the import statement stands."""
    found = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")[: len(module.split(".")) - node.level
                                           + (1 if is_package else 0)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def project_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: {m for m in imports_of(path, name) if m in modules and m != name} for name,
            path in modules.items()}


def test_every_package_of_the_library_has_a_layer():
    packages = {package_of(m) for m in project_modules() if m != "transformer_viz"}
    assert packages <= set(LAYER_OF), ("give these a layer in "
                                       f"LAYERS: {sorted(packages - set(LAYER_OF))}")


def test_no_import_goes_up_a_layer_or_sideways():
    wrong = []
    for module, targets in project_graph().items():
        if module == "transformer_viz":
            continue
        mine = package_of(module)
        for target in targets:
            theirs = package_of(target)
            if (target != "transformer_viz" and theirs != mine
                and LAYER_OF[theirs] >= LAYER_OF[mine]):
                wrong.append(f"{module} ({mine}) imports {target} ({theirs})")
    assert not wrong, "\n".join(sorted(wrong))


def test_no_import_cycle_among_the_projects_modules():
    graph = project_graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(path[path.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, "\n".join(cycles)


def test_the_cycle_check_finds_a_cycle_hidden_in_a_function(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("import b\n")
    b.write_text("def later():\n    from a import x\n")
    assert "b" in imports_of(a, "a") and "a" in imports_of(b, "b")


# The fence (transformer_viz/fenced/) holds Streamlit's private internals that the app uses.
STREAMLIT_FENCE = "transformer_viz.fenced.streamlit_private"


@pytest.mark.parametrize("module", sorted(m for m in project_modules()
                                          if package_of(m) != "app" and m != STREAMLIT_FENCE))
def test_only_the_app_imports_streamlit(module):
    path = project_modules()[module]
    assert not {m for m in imports_of(path, module) if m.split(".")[0] == "streamlit"}, module


def test_no_project_module_imports_the_benchmarks_or_the_tests():
    for module, path in project_modules().items():
        assert not {m for m in imports_of(path, module)
                    if m.split(".")[0] in ("bench", "tests")}, module


def _functions(tree: ast.AST):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_no_module_over_500_lines_no_function_over_60_no_page_over_150():
    too_long = []
    for module, path in project_modules().items():
        text = path.read_text(encoding="utf-8")
        limit = 150 if "app.pages" in module else 500
        if len(text.splitlines()) > limit:
            too_long.append(f"{module}: {len(text.splitlines())} lines (at most {limit})")
        for fn in _functions(ast.parse(text)):
            if fn.end_lineno - fn.lineno + 1 > 60:
                too_long.append(f"{module}.{fn.name}: {fn.end_lineno - fn.lineno + 1} lines (at "
                                "most 60)")
    assert not too_long, "\n".join(too_long)
