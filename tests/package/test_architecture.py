"""The layout is the architecture: these tests read the sources and hold it.

``docs/architecture.md`` draws the layers; this file is what keeps the
drawing true. Every import of the package's own modules is read from the
syntax tree, the ones inside functions included and the ones under
``if TYPE_CHECKING:`` left out (they never run, so they cannot make a
cycle at import time or a dependency at run time). From that graph: no
cycle, among the modules or among the floors; every arrow pointing down a
floor (:data:`FLOORS`), never across or up; no ``global`` statement;
few imports inside functions, each saying why it is there; and extensions
written against the public API alone.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = REPO / "src"
PACKAGE = "jupyter_mcp_server"

#: The floors, lowest first: each top-level module or package of the package on one. A module
#: imports only its own module or package and what stands on a lower floor: never one beside it,
#: never one above (docs/architecture.md draws them).
FLOORS: tuple[tuple[str, ...], ...] = (
    # The ground: facts and failures every floor may name.
    ("_version", "_text", "_errors", "_process"),
    # What is watched and allowed, and where: the hooks, policy, the workspace boundary.
    ("_jupyter_urls", "_hooks", "_policy", "_workspace"),
    # The settings, the notebooks, the kernels; the shapes of the tools' results.
    ("_config", "_store", "_kernels", "_schemas"),
    # Who is calling and what a call asks; the extension mechanism; outputs as a model reads them.
    ("_calls", "_extensions", "_rendering"),
    # The running server's state.
    ("_state",),
    # What every tool call shares: the notebook it means, how it answers, who hears it.
    ("_tool_calls",),
    # What a person is shown: the apps' pages, what a call shows, changes kept for review.
    ("_apps",),
    # Executions and whole-notebook runs: called by the tools, JSON lines and the API alike.
    ("_runs",),
    # The tools.
    ("_tools",),
    # The protocol features, the server's own tools, the public API.
    ("_protocol", "_core_tools", "api", "capabilities"),
    # The transports; the API's first import path.
    ("_transports", "extensions"),
    # The composition root.
    ("_app",),
    # The two ways in.
    ("_cli", "_jupyter"),
    # The package itself and ``python -m``.
    ("__init__", "__main__"),
)
#: Imports of the package inside functions: each a deliberate lazy one (three are the public
#: API's: `tool_handler` and the run engine (`execution_result`, `ServerAccess.run_code`) reach
#: the server's parts only when used, `ServerAccess.open_remote_kernel` brings httpx only when a
#: remote kernel is opened; one is the HTTP transport's sign-in, which brings PyJWT only with
#: --auth-issuer). The transport a server serves over is imported by name, in one place
#: (`_transports.serve_over`).
MOST_LAZY_IMPORTS = 10


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SOURCES).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted((SOURCES / PACKAGE).rglob("*.py"))}


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement that runs, and whether it is inside a function."""

    def walk(
        node: ast.AST, in_function: bool
    ) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and is_type_checking(child):
                for orelse in child.orelse:
                    yield from walk(orelse, in_function)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, in_function
            yield from walk(
                child,
                in_function
                or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)),
            )

    yield from walk(tree, False)


def targets(
    node: ast.Import | ast.ImportFrom, importer: str, is_package: bool, known: set[str]
) -> set[str]:
    """The package's modules an import statement loads (a name that is a submodule counts as it)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
        return {name for name in names if name in known}
    if node.level:
        base = importer.split(".") if is_package else importer.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        origin = ".".join([*base, node.module] if node.module else base)
    else:
        origin = node.module or ""
    if origin not in known:
        return set()
    submodules = {f"{origin}.{alias.name}" for alias in node.names} & known
    found = set(submodules)
    if len(submodules) < len(node.names):
        # A name the package's __init__ defines: the __init__ itself is what is needed.
        found.add(origin)
    return found


def import_graph() -> tuple[dict[str, set[str]], list[tuple[str, int, str]]]:
    """Module -> the package modules it imports; and every import inside a function."""
    found = modules()
    known = set(found)
    graph: dict[str, set[str]] = {name: set() for name in found}
    lazy: list[tuple[str, int, str]] = []
    for name, path in found.items():
        source = path.read_text()
        lines = source.splitlines()
        for node, in_function in imports(ast.parse(source)):
            loaded = targets(node, name, path.name == "__init__.py", known)
            graph[name] |= loaded - {name}
            if in_function and loaded:
                around = " ".join(lines[max(0, node.lineno - 5) : node.end_lineno or node.lineno])
                lazy.append((name, node.lineno, around))
    return graph, lazy


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_import_graph_has_no_cycle() -> None:
    graph, _lazy = import_graph()
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    graph, _lazy = import_graph()
    graph[f"{PACKAGE}._store.formats"].add(f"{PACKAGE}._tools.cells")
    assert any(f"{PACKAGE}._store.formats" in component for component in cycles(graph))


def unit_of(module: str) -> str:
    """The top-level module or package a module belongs to (``__init__`` for the package's own)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def floor_of() -> dict[str, int]:
    return {unit: floor for floor, units in enumerate(FLOORS) for unit in units}


def arrows_not_down(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a module on the same floor or a higher one (its own unit aside)."""
    floors = floor_of()
    return [
        f"{module} -> {target}"
        for module, loaded in sorted(graph.items())
        for target in sorted(loaded)
        if unit_of(module) != unit_of(target) and floors[unit_of(target)] >= floors[unit_of(module)]
    ]


def test_every_top_level_module_and_package_stands_on_one_floor() -> None:
    units = {unit_of(name) for name in modules()}
    placed = [unit for units_on in FLOORS for unit in units_on]
    assert len(placed) == len(set(placed)), "a unit on two floors"
    assert units == set(placed), (
        f"not on a floor: {sorted(units - set(placed))}; gone: {sorted(set(placed) - units)}"
    )


def test_every_arrow_points_down_a_floor() -> None:
    graph, _lazy = import_graph()
    assert arrows_not_down(graph) == []


def test_the_floors_find_a_planted_arrow_up_and_one_across() -> None:
    graph, _lazy = import_graph()
    graph[f"{PACKAGE}._hooks"].add(f"{PACKAGE}._calls.asking")
    graph[f"{PACKAGE}._store.formats"].add(f"{PACKAGE}._kernels.outputs")
    assert arrows_not_down(graph) == [
        f"{PACKAGE}._hooks -> {PACKAGE}._calls.asking",
        f"{PACKAGE}._store.formats -> {PACKAGE}._kernels.outputs",
    ]


def test_the_floors_have_no_cycle() -> None:
    """Taken whole, the top-level modules and packages import one another without a circle."""
    graph, _lazy = import_graph()
    units: dict[str, set[str]] = {unit_of(name): set() for name in graph}
    for module, loaded in graph.items():
        units[unit_of(module)] |= {unit_of(t) for t in loaded} - {unit_of(module)}
    assert cycles(units) == []


def tool_module_importers(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a module of ``_tools`` from outside it, but the core tools' own."""
    return [
        f"{module} -> {target}"
        for module, loaded in sorted(graph.items())
        for target in sorted(loaded)
        if unit_of(target) == "_tools"
        and unit_of(module) != "_tools"
        and module != f"{PACKAGE}._core_tools"
    ]


def test_the_tools_are_reached_only_as_the_core_tools_extension() -> None:
    """What the tools share stands below them, in rooms named for it: whole-notebook runs,
    the JSON-lines transport and the API call into ``_runs`` and ``_tool_calls``, never into
    a tool module; only ``_core_tools`` (which offers the tools as an extension) imports one."""
    graph, _lazy = import_graph()
    assert tool_module_importers(graph) == []
    graph[f"{PACKAGE}._transports.jsonlines"].add(f"{PACKAGE}._tools.running")
    assert tool_module_importers(graph) == [
        f"{PACKAGE}._transports.jsonlines -> {PACKAGE}._tools.running"
    ]


#: The tool modules that call another's tools: the apps' own tools, which run what they
#: front (the notebook view's Run is execute_cell's; an accepted review applies the edit or
#: the restore it showed).
TOOLS_FRONTING_TOOLS = {
    ("_tools.viewing", "_tools.running"),
    ("_tools.reviewing", "_tools.editing"),
    ("_tools.reviewing", "_tools.history"),
}


def tools_importing_tools(graph: dict[str, set[str]]) -> list[str]:
    return [
        f"{module} -> {target}"
        for module, loaded in sorted(graph.items())
        for target in sorted(loaded)
        if unit_of(module) == unit_of(target) == "_tools"
        and module not in {f"{PACKAGE}._tools", f"{PACKAGE}._tools.declarations"}
        and target != f"{PACKAGE}._tools"
        and (module.removeprefix(f"{PACKAGE}."), target.removeprefix(f"{PACKAGE}."))
        not in TOOLS_FRONTING_TOOLS
    ]


def test_a_tool_module_imports_no_other_tool_module() -> None:
    """What two tool modules share (an argument's type, a run's queue, a cell's position)
    stands on a floor below both; ``declarations`` lists them, and the apps' own tools run
    the tools they front."""
    graph, _lazy = import_graph()
    assert tools_importing_tools(graph) == []
    graph[f"{PACKAGE}._tools.runs"].add(f"{PACKAGE}._tools.cells")
    assert tools_importing_tools(graph) == [f"{PACKAGE}._tools.runs -> {PACKAGE}._tools.cells"]


def test_the_tools_folder_holds_only_modules_that_declare_tools() -> None:
    """No drawer of helpers in ``_tools``: every module there is one ``declarations`` lists."""
    folder = SOURCES / PACKAGE / "_tools"
    assert [p.name for p in folder.iterdir() if p.is_dir() and p.name != "__pycache__"] == []
    graph, _lazy = import_graph()
    listed = graph[f"{PACKAGE}._tools.declarations"]
    unlisted = [
        name
        for name in modules()
        if unit_of(name) == "_tools"
        and name not in listed
        and name not in {f"{PACKAGE}._tools", f"{PACKAGE}._tools.declarations"}
    ]
    assert unlisted == []


#: The longest string a module of the apps may spell out (docstrings aside): their pages'
#: HTML, CSS and JavaScript are files of the package (``_apps/pages/``), not Python strings.
LONGEST_APP_STRING = 300


def long_strings(path: Path) -> list[str]:
    """Each string literal in a module longer than :data:`LONGEST_APP_STRING`, but docstrings."""
    tree = ast.parse(path.read_text())
    documented = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, documented)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        f"{path.name}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and len(node.value) > LONGEST_APP_STRING
        and id(node) not in docstrings
    ]


def test_the_apps_pages_are_files_not_python_strings(tmp_path: Path) -> None:
    """The MCP Apps live in ``_apps/`` (served by ``_protocol/apps.py``): no module of theirs
    embeds a page's HTML, CSS or JavaScript; ``_apps/pages/`` holds them as files."""
    package = SOURCES / PACKAGE
    sources = [*sorted((package / "_apps").glob("*.py")), package / "_protocol" / "apps.py"]
    assert [found for path in sources for found in long_strings(path)] == []
    pages = {path.suffix for path in (package / "_apps" / "pages").iterdir()}
    assert {".html", ".css", ".js"} <= pages
    planted = tmp_path / "planted.py"
    planted.write_text(f'"""{"d" * 400}"""\nSTYLE = """\n{"body {{ margin: 0; }}" * 20}\n"""\n')
    assert long_strings(planted) == ["planted.py:2"]


def test_no_global_statement_in_the_sources() -> None:
    found = [
        f"{name}:{node.lineno}"
        for name, path in modules().items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Global)
    ]
    assert found == []


MUTABLE_CONTAINERS = {"dict", "list", "set", "OrderedDict", "defaultdict", "deque"}


def module_level_registries(path: Path) -> list[str]:
    """Module-level names bound to a mutable container: what a whole process would share."""
    found = []
    for node in ast.parse(path.read_text()).body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        called = value.func if isinstance(value, ast.Call) else None
        name = getattr(called, "id", None) or getattr(called, "attr", None)
        if isinstance(value, (ast.Dict, ast.List, ast.Set)) or name in MUTABLE_CONTAINERS:
            found.append(f"{path.name}:{node.lineno}")
    return found


def test_the_reviews_are_kept_by_the_state_not_by_the_process(tmp_path: Path) -> None:
    """Proposals shown in the review app belong to one server's state: no module keeps them."""
    for module in ("_apps/reviews.py", "_calls/proposals.py"):
        assert module_level_registries(SOURCES / PACKAGE / module) == []
    planted = tmp_path / "planted.py"
    planted.write_text("_kept: OrderedDict[str, int] = OrderedDict()\nX = 1\nY = {}\n")
    assert module_level_registries(planted) == ["planted.py:1", "planted.py:3"]


def test_imports_inside_functions_are_few_and_each_says_why() -> None:
    _graph, lazy = import_graph()
    assert len(lazy) <= MOST_LAZY_IMPORTS, "\n".join(f"{m}:{line}" for m, line, _ in lazy)
    unexplained = [f"{m}:{line}" for m, line, text in lazy if "#" not in text and '"""' not in text]
    assert unexplained == [], "an import inside a function says why it is lazy, in a comment"


def test_extensions_and_examples_import_only_the_public_api() -> None:
    reached = []
    for folder in (REPO / "extensions", REPO / "examples"):
        for path in sorted(folder.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and not node.level:
                    names = [node.module or ""]
                elif isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                else:
                    continue
                reached += [
                    f"{path.relative_to(REPO)}:{node.lineno} {name}"
                    for name in names
                    if name.split(".")[0] == PACKAGE
                    and name.removeprefix(f"{PACKAGE}.") not in PUBLIC_MODULES
                ]
    assert reached == []


def test_the_public_api_declares_what_it_exports() -> None:
    import jupyter_mcp_server.api as api

    assert api.__all__ and len(set(api.__all__)) == len(api.__all__)
    assert [name for name in api.__all__ if not hasattr(api, name)] == []


def reads_environment(node: ast.AST) -> bool:
    """``os.getenv(...)``, ``os.environ.get(...)`` or ``os.environ[...]`` read."""
    if isinstance(node, ast.Attribute) and node.attr in ("getenv", "environb"):
        return True
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
    ):
        return isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "environ"
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        return isinstance(node.value, ast.Attribute) and node.value.attr == "environ"
    return False


def test_only_the_configuration_reads_a_setting_from_the_environment() -> None:
    """``os.environ.get``, ``os.getenv`` and ``os.environ[...]`` appear in _config/reading.py alone (the
    whole environment may still be handed on, as it is to a kernel)."""
    readers = []
    for name, path in modules().items():
        if name == f"{PACKAGE}._config.reading":
            continue
        readers += [
            f"{name}:{node.lineno}"
            for node in ast.walk(ast.parse(path.read_text()))
            if reads_environment(node)
        ]
    assert readers == []


#: What the package offers by name: its version and Jupyter Server hook, ``python -m``, the
#: extension API, and the two import paths extension authors were shown first (thin faces over
#: ``api``). Everything else is private (a leading underscore, as httpx marks its own).
PUBLIC_MODULES = {"__init__", "__main__", "api", "extensions", "capabilities"}
#: Private modules directly in the package: the rest live in folders named for what they hold.
MOST_TOP_LEVEL_MODULES = 9


def test_the_top_level_holds_few_modules() -> None:
    top = sorted(p.stem for p in (SOURCES / PACKAGE).glob("*.py") if p.stem not in PUBLIC_MODULES)
    assert len(top) <= MOST_TOP_LEVEL_MODULES, top


def test_the_documented_import_paths_hand_out_the_api_s_own_objects() -> None:
    """Extensions written as first documented keep loading: the old paths are the same names."""
    import jupyter_mcp_server.api as api
    import jupyter_mcp_server.capabilities as capabilities
    import jupyter_mcp_server.extensions as extensions

    for face in (extensions, capabilities):
        assert face.__all__ and set(face.__all__) <= set(api.__all__)
        assert all(getattr(face, name) is getattr(api, name) for name in face.__all__)


def test_only_the_api_is_public() -> None:
    exposed = sorted(
        path.name
        for path in (SOURCES / PACKAGE).iterdir()
        if (path.suffix == ".py" or (path / "__init__.py").exists())
        and path.stem not in PUBLIC_MODULES
        and not path.name.startswith("_")
    )
    assert exposed == []


def test_every_kernel_backend_uses_the_one_seam() -> None:
    """The three backends are KernelBackend subclasses, built by ``build``, and published by
    the same entry points an extension's backend is."""
    import tomllib

    from jupyter_mcp_server._kernels.backends import BUILT_IN_BACKENDS, KernelBackend, backend_class

    published = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"][
        "jupyter_mcp_server.kernel_backends"
    ]
    assert published == BUILT_IN_BACKENDS
    for name in published:
        backend = backend_class(name)
        assert issubclass(backend, KernelBackend) and backend.name == name
        assert not backend.__abstractmethods__, (
            f"{name} leaves {sorted(backend.__abstractmethods__)} abstract"
        )


def test_the_kernels_are_two_ideas_in_two_modules() -> None:
    """The fleet starts, counts, reaps and stops kernels and knows no notebook's binding; the
    manager keeps which notebook has which kernel, on top of it."""
    from jupyter_mcp_server._kernels.fleet import KernelFleet
    from jupyter_mcp_server._kernels.manager import KernelManager

    binding = {"attach", "detach", "live_kernel_of", "restart", "kernel_id_of", "is_lost"}
    assert sorted(binding & set(dir(KernelFleet))) == []
    assert binding <= set(vars(KernelManager))
    fleet = (SOURCES / PACKAGE / "_kernels" / "fleet.py").read_text()
    assert "_bindings" not in fleet and "manager" not in import_lines(fleet)


def import_lines(source: str) -> str:
    return "\n".join(line for line in source.splitlines() if line.startswith(("import", "from")))


#: What a kernel backend may offer beyond starting kernels: each declared on KernelBackend
#: with the answer of a backend that offers nothing more.
OPTIONAL_BACKEND_MEMBERS = (
    "adopt",
    "bind_sessions",
    "can_start",
    "choose",
    "folders_are_local",
    "listed",
    "reached_at",
    "sees_notebooks",
    "sessions",
    "shares_kernels",
)


def seam_lookups(tree: ast.AST, members: set[str], names: set[str]) -> list[int]:
    """Lines that look a backend's member up by name (``getattr(backend, "adopt", ...)``) or
    compare something with a backend's published name (``== "jupyter-server"``)."""
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in members
            and "backend" in ast.unparse(node.args[0])
        ):
            found.append(node.lineno)
        if isinstance(node, ast.Compare) and any(
            isinstance(side, ast.Constant) and side.value in names
            for side in (node.left, *node.comparators)
        ):
            found.append(node.lineno)
    return found


def test_the_kernel_seam_is_declared_not_looked_up() -> None:
    """What a backend may offer is declared on KernelBackend with a default; nothing in the
    server looks a backend's method up by name, or branches on a backend's name (which a
    third-party backend could not opt into)."""
    from jupyter_mcp_server._kernels.backends import BUILT_IN_BACKENDS, KernelBackend

    assert [name for name in OPTIONAL_BACKEND_MEMBERS if not hasattr(KernelBackend, name)] == []
    members = {name for name in dir(KernelBackend) if not name.startswith("__")} | {"version"}
    found = [
        f"{module}:{line}"
        for module, path in modules().items()
        for line in seam_lookups(ast.parse(path.read_text()), members, set(BUILT_IN_BACKENDS))
    ]
    assert found == []
    planted = ast.parse(
        "adopt = getattr(self.backend, 'adopt', None)\nif backend.name == 'local': pass\n"
    )
    assert seam_lookups(planted, members, set(BUILT_IN_BACKENDS)) == [1, 2]


def state_fields() -> set[str]:
    """The fields a ServerState is built with (its dataclass fields, read from the source)."""
    tree = ast.parse((SOURCES / PACKAGE / "_state.py").read_text())
    (state,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ServerState"]
    return {
        node.target.id
        for node in state.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    }


def test_a_built_state_refuses_every_assignment(tmp_path: Path) -> None:
    """Its parts are handed in when it is made: none is swapped on it afterwards."""
    import dataclasses

    import pytest

    from jupyter_mcp_server._app import build_state
    from jupyter_mcp_server._config import read_config

    state = build_state(read_config({"workspace_root": str(tmp_path)}))
    for name in ("store", "workspace", "place", "people", "kernels", "jupyter", "anything"):
        with pytest.raises(AttributeError):
            setattr(state, name, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.reviews = state.reviews  # type: ignore[misc]
    before = state.place
    (tmp_path / "elsewhere").mkdir()
    assert state.use_workspace(tmp_path / "elsewhere", "client-roots") is None
    assert state.place is not before and state.workspace_source == "client-roots"
    assert state.store.observers is before.store.observers


def test_only_one_method_replaces_where_notebooks_are_kept() -> None:
    """The workspace, its store and search texts and the Jupyter Server are one slot, the
    state's ``place``: replaced (``object.__setattr__``) in ``ServerState.move_to`` alone, and
    assigned nowhere. No extension host's ``server_factory`` is set after it is built."""
    found = []
    for name, path in modules().items():
        tree = ast.parse(path.read_text())
        scopes = {
            id(inner): node.name
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            for inner in ast.walk(node)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "__setattr__"
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value == "place"
            ):
                found.append(f"{name}.{scopes.get(id(node))}")
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                found += [
                    f"{name}:{node.lineno} {ast.unparse(t)}"
                    for t in targets
                    if isinstance(t, ast.Attribute) and t.attr in {"place", "server_factory"}
                ]
    assert found == [f"{PACKAGE}._state.move_to"]


def test_no_built_part_of_the_server_is_changed_outside_the_composition_root() -> None:
    """A field a ServerState is built with, the environments' kernelspec folders, or
    the kernel manager's backend and
    kernel source, or the extension host's server factory, is assigned (``x.attr = ...`` on
    anything but ``self``) only in app.py."""
    built = {"kernel_source", "server_factory", "specs", "kernels_dir"} | state_fields()
    changed = []
    for name, path in modules().items():
        if name == f"{PACKAGE}._app":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, (ast.AugAssign, ast.AnnAssign))
                else []
            )
            for target in targets:
                if not isinstance(target, ast.Attribute) or target.attr not in built:
                    continue
                if isinstance(target.value, ast.Name) and target.value.id == "self":
                    continue
                changed.append(f"{name}:{node.lineno} {ast.unparse(target)}")
    assert changed == []


def test_each_protocol_feature_is_declared_and_handed_to_the_server_as_it_is_made() -> None:
    """One way to attach a protocol feature: a ``Feature`` in the one tuple ``_app.py`` passes
    to the server's constructor. No module defines an ``attach_*`` function in ``_protocol``,
    changes a server's middleware list, or sets an attribute on a built server."""
    found = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.name.startswith("attach_")
                and name.startswith(f"{PACKAGE}._protocol")
            ):
                found.append(f"{name}:{node.lineno} def {node.name}")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in {"append", "extend", "insert"}
                and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr == "middleware"
            ):
                found.append(f"{name}:{node.lineno} {ast.unparse(node.func)}")
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id in {"server", "argument_errors"}
                    ):
                        found.append(f"{name}:{node.lineno} {ast.unparse(target)}")
    assert found == []

    app = ast.parse((SOURCES / PACKAGE / "_app.py").read_text())
    calls = [node for node in ast.walk(app) if isinstance(node, ast.Call)]
    given = [call for call in calls if any(k.arg == "features" for k in call.keywords)]
    assert len(given) == 1, "the features are passed to one server constructor"
    assert not [
        ast.unparse(call)
        for call in calls
        if any(k.arg in {"extensions", "middleware"} for k in call.keywords)
        # (a Feature declares them; the state's `extensions` are the extension host's)
        and not (isinstance(call.func, ast.Name) and call.func.id in {"Feature", "ServerState"})
    ], "extensions and middleware arrive as features, not beside them"
    (passed,) = [k.value for k in given[0].keywords if k.arg == "features"]
    assert isinstance(passed, ast.Name)
    bound = [
        node.value
        for node in ast.walk(app)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == passed.id for t in node.targets)
    ]
    assert len(bound) == 1 and isinstance(bound[0], ast.Tuple), "one ordered tuple"


def test_the_module_map_in_the_docs_is_the_modules_own() -> None:
    """docs/architecture.md's module map is made from the docstrings: a module added, moved
    or redescribed without `python scripts/module_map.py` fails here, never a stale map."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("module_map", REPO / "scripts" / "module_map.py")
    assert spec is not None and spec.loader is not None
    module_map = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module_map)
    document = module_map.DOC.read_text(encoding="utf-8")
    assert module_map.BEGIN in document and module_map.END in document
    assert module_map.with_map(document) == document, (
        "docs/architecture.md's module map is stale: run python scripts/module_map.py"
    )
    for path in sorted((REPO / "src" / PACKAGE).rglob("*.py")):
        if path.name != "__main__.py":
            assert module_map.summary(path), (
                f"{path.relative_to(REPO)} says nothing of why it exists"
            )


#: What importing the API must not load: the running server's parts (its state, store,
#: tools and what they share, runs, apps, transports, Jupyter Server side, composition
#: root), the kernels' manager, and the remote kernels' client (httpx, the websocket).
SERVER_PARTS = (
    "_app",
    "_apps",
    "_jupyter",
    "_rendering",
    "_runs",
    "_state",
    "_store",
    "_tool_calls",
    "_tools",
    "_transports",
)
SERVER_MODULES = (
    "jupyter_mcp_server._kernels.manager",
    "jupyter_mcp_server._kernels.remote",
    "jupyter_mcp_server._kernels.websocket",
)
#: Handed out no more (each still reachable, with a DeprecationWarning): the live observer
#: lists, and the remote-kernel plumbing one sandbox variant used.
SUPERSEDED = ("Hooks", "open_remote_kernel", "RemoteKernel", "KernelWebSocket", "normalize_url")


def test_the_api_is_light() -> None:
    """An extension's module imports the API to subclass, to name codes and to answer: that
    loads, for every name the API hands out, none of the server's parts."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "import jupyter_mcp_server.api as api\n"
        "from jupyter_mcp_server.api import *\n"
        "assert all(getattr(api, name) is not None for name in api.__all__)\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('jupyter_mcp_server'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = done.stdout.split()
    reached = [
        m
        for m in loaded
        if (m.split(".")[1:2] and m.split(".")[1] in SERVER_PARTS) or m in SERVER_MODULES
    ]
    assert reached == [], reached


def bindings(tree: ast.Module) -> Iterator[str]:
    """Every name a module's top-level statements bind, once per statement binding it."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom | ast.Import):
            yield from (alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name
        elif isinstance(node, ast.Assign):
            yield from (t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            yield node.target.id


def test_the_api_writes_each_name_once() -> None:
    """Each public name is bound by one statement of api.py (its import or its definition) and
    written nowhere else in it: no table of names, no list beside the imports, no second import
    for type checkers. ``__all__`` is what the module binds without a leading underscore."""
    import collections

    import jupyter_mcp_server.api as api
    import jupyter_mcp_server.capabilities as capabilities
    import jupyter_mcp_server.extensions as extensions

    for module in (api, extensions, capabilities):
        tree = ast.parse(Path(module.__file__ or "").read_text())
        bound = collections.Counter(bindings(tree))
        assert [name for name in module.__all__ if bound[name] != 1] == [], module.__name__
        written = {
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        }
        assert sorted(written & set(module.__all__)) == [], module.__name__
        assert [n for n in module.__all__ if n.startswith("_")] == []
        type_checking = [n for n in tree.body if isinstance(n, ast.If) and is_type_checking(n)]
        imported_twice = {
            alias.asname or alias.name
            for block in type_checking
            for node in ast.walk(block)
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        } & set(module.__all__)
        assert imported_twice == set(), module.__name__


def test_the_api_hands_out_no_live_part_of_the_server() -> None:
    """No live observer lists and no remote-kernel plumbing among the API's names; an extension
    observes through ``ServerAccess.observe`` and opens a remote kernel through
    ``ServerAccess.open_remote_kernel``. The superseded names still answer, warning."""
    import warnings
    from types import SimpleNamespace

    import jupyter_mcp_server.api as api
    from jupyter_mcp_server._hooks import Hooks

    assert sorted(set(SUPERSEDED) & set(api.__all__)) == []
    for name in (*SUPERSEDED, "ArgumentNames"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert getattr(api, name) is not None
        assert [w.category for w in caught] == [DeprecationWarning], name
        assert "use " in str(caught[0].message)

    hooks = Hooks()
    access = api.ServerAccess(SimpleNamespace(hooks=hooks))  # type: ignore[arg-type]
    seen: list[object] = []
    for event in (api.ToolCall, api.ToolCallEnded, api.Execution, api.ExecutionEnded):
        access.observe(event, seen.append)
    assert [len(observers) for observers in vars(hooks).values()] == [1, 1, 1, 1]
    with pytest.raises(TypeError):
        access.observe(str, seen.append)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert access.hooks is hooks
    assert [w.category for w in caught] == [DeprecationWarning]


def test_the_api_lends_capabilities_read_only() -> None:
    """An extension reads what is on; only the person's configuration changes it."""
    from jupyter_mcp_server._policy.capabilities import CapabilitiesView, CapabilityRegistry
    from jupyter_mcp_server.api import ServerAccess

    assert ServerAccess.capabilities.fget.__annotations__["return"] in (
        "CapabilitiesView",
        CapabilitiesView,
    )
    view = CapabilitiesView(CapabilityRegistry())
    assert not any(hasattr(view, name) for name in ("set", "apply", "declare"))
    assert view.names and view.enabled(view.names[0]) in (True, False)


def test_an_unsupported_platform_is_said_not_a_traceback() -> None:
    """Where POSIX process groups and signals are missing (Windows), the command exits with
    status 2 and a sentence naming what to use instead, before any POSIX-only import."""
    import subprocess
    import sys

    probe = "import sys\nsys.platform = 'win32'\nimport jupyter_mcp_server._cli\n"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2, done.stderr
    assert "WSL" in done.stderr and "Traceback" not in done.stderr


def test_every_test_module_is_in_the_folder_of_its_area() -> None:
    """A newcomer finds a test by its area (docs/architecture.md lists the folders): none is
    left at the top of tests/, where only the shared support lives."""
    tests = REPO / "tests"
    assert sorted(path.name for path in tests.glob("test_*.py")) == []
    areas = {path.parent.name for path in tests.glob("*/test_*.py")}
    drawn = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert [area for area in sorted(areas) if f"  {area}/" not in drawn] == []
