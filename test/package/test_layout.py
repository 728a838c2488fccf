# Copyright 2026 sim_clock maintainers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
The package's layout: each part keeps its one rule, and no module outgrows a reader.

Parts (doc/design.md, "Layout"): the time core, the node, the bags, the client side. Checked on
the sources' imports (every ``import``, at any depth) and, for what loads at run time, in a
fresh interpreter.
"""

import ast
import os

from harness import ROOT
from layout_rules import RULES
from layout_rules import within
import pytest

pytestmark = pytest.mark.fast

PACKAGE = os.path.join(ROOT, 'sim_clock')


def _modules():
    for folder, _, files in os.walk(PACKAGE):
        for name in sorted(files):
            if name.endswith('.py'):
                path = os.path.join(folder, name)
                relative = os.path.relpath(path, ROOT)[:-3].replace(os.sep, '.')
                yield relative.removesuffix('.__init__'), path


MODULES = dict(_modules())


def _imports(path: str):
    with open(path) as source:
        tree = ast.parse(source.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            # `from sim_clock import _replay` names a module too.
            yield from (f'{node.module}.{alias.name}' for alias in node.names)


def test_every_module_belongs_to_a_part_or_is_named():
    """The modules outside the parts are few and known: the package, compat, testing."""
    loose = {name for name in MODULES
             if not any(within(name, prefix) for prefix, _ in RULES.values())}
    assert loose == {'sim_clock', 'sim_clock.compat', 'sim_clock.testing'}


@pytest.mark.parametrize('part', sorted(RULES))
def test_part_keeps_its_rule(part):
    """No module of a part imports what its part must not (checked at every depth)."""
    prefix, forbidden = RULES[part]
    broken = [f'{name} imports {imported}'
              for name, path in MODULES.items() if within(name, prefix)
              for imported in _imports(path)
              if any(within(imported, banned) for banned in forbidden)]
    assert not broken


def test_engine_imports_of_the_node_only_its_own_folder():
    """The frame engine is given its collaborators by the interfaces in its own folder."""
    engine = [name for name in MODULES if within(name, 'sim_clock.node.engine')]
    assert 'sim_clock.node.engine.steps' in engine and 'sim_clock.node.engine.free_run' in engine
    imported = {imported for name in engine for imported in _imports(MODULES[name])
                if within(imported, 'sim_clock.node')}
    outside = {name for name in imported if not within(name, 'sim_clock.node.engine')}
    assert not outside


def _import_graph() -> dict:
    """Return module -> the package's modules it imports (every import, at any depth)."""
    graph = {}
    for name, path in MODULES.items():
        # `from sim_clock.node import flow` names the module; `from x import name` the module x.
        imported = {module for module in _imports(path) if module in MODULES}
        graph[name] = sorted(imported - {name})
    return graph


def _cycles(graph: dict) -> list:
    """Return one import cycle through each strongly connected group of ``graph`` (Tarjan)."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(module):
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph[module]:
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
                groups.append(sorted(group))

    for module in graph:
        if module not in index:
            visit(module)
    return groups


def test_no_import_cycle():
    """
    No module imports, at any depth, one that imports it back: a type-only import counts.

    A package imports its own submodules by design (``sim_clock.node.engine`` names its
    classes), so a package and the modules under it are not a cycle.
    """
    graph = _import_graph()
    for name in graph:
        graph[name] = [imported for imported in graph[name]
                       if not within(imported, name) and not within(name, imported)]
    assert _cycles(graph) == []


def test_the_cycle_check_finds_a_cycle():
    """The check itself: a type-only import back, as the engine's runner once had, is found."""
    assert _cycles({'a': ['b'], 'b': ['c'], 'c': ['a'], 'd': ['a']}) == [['a', 'b', 'c']]
    assert _cycles({'a': ['b'], 'b': []}) == []


def test_node_classes_shadow_no_rclpy_node_attribute():
    """The attributes our nodes set are not rclpy Node's own (``_parameters`` once was)."""
    import inspect

    from rclpy.node import Node
    node_attributes = set(_assigned(inspect.getsource(Node)))
    for module in ('sim_clock.node.server', 'sim_clock.bag.recorder', 'sim_clock.bag.follower'):
        with open(MODULES[module]) as source:
            assert not set(_assigned(source.read())) & node_attributes, module


def _assigned(source: str):
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name) and node.value.id == 'self'):
            yield node.attr


#: Where the server is made and its parts wired: they may reach into it.
COMPOSITION_ROOTS = {'sim_clock.node.server', 'sim_clock.bag.player'}


def _server_only_attributes() -> set:
    """Return what ClockServer has that an rclpy Node has not: its parts, its own methods."""
    from rclpy.node import Node
    with open(MODULES['sim_clock.node.server']) as source:
        tree = ast.parse(source.read())
    server = next(node for node in tree.body
                  if isinstance(node, ast.ClassDef) and node.name == 'ClockServer')
    names = {node.name for node in server.body if isinstance(node, ast.FunctionDef)}
    names |= set(_assigned(ast.unparse(server)))
    return names - set(dir(Node))


def _is_a_node(expr) -> bool:
    """Whether ``expr`` is how a part names the node it was given: node, self._node, ..."""
    return ((isinstance(expr, ast.Name) and expr.id == 'node')
            or (isinstance(expr, ast.Attribute) and expr.attr in ('node', '_node')))


def test_no_part_reads_the_servers_own_attributes_on_its_node():
    """
    A part given the node uses it as an rclpy node only: never the server's parts or methods.

    The parts each get what they use (doc/design.md): a part that read ``node.engine`` or
    ``node.control`` would be handed the whole server again.
    """
    server_only = _server_only_attributes()
    assert {'engine', 'control', 'changes', 'timeline', 'flow'} <= server_only
    found = []
    for name, path in MODULES.items():
        if name in COMPOSITION_ROOTS or not name.startswith(('sim_clock.node', 'sim_clock.bag')):
            continue
        with open(path) as source:
            tree = ast.parse(source.read())
        found += [f'{name}:{node.lineno}: .{node.attr}' for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and node.attr in server_only
                  and _is_a_node(node.value)]
    assert found == []


def test_bag_player_composes_the_server():
    """The bag player is no ClockServer subclass and overrides no private method of it."""
    from sim_clock.bag.frame_sink import BagFrames
    from sim_clock.bag.player import BagPlayer
    from sim_clock.node.server import ClockServer
    for cls in (BagPlayer, BagFrames):
        assert not issubclass(cls, ClockServer)
        private = {name for name in vars(cls)
                   if name.startswith('_') and not name.startswith('__')}
        assert not {name for name in private if hasattr(ClockServer, name)}


def test_suite_imports_the_installed_package():
    """
    The tests import sim_clock as installed (with its generated srv), never the sources.

    Where SIM_CLOCK_EXPECTED_PREFIX is set (the colcon test of the suite sets it to the
    workspace's install/sim_clock), the package must come from there.
    """
    import sim_clock
    import sim_clock.srv  # noqa: F401 (generated: only in an install)
    location = os.path.realpath(sim_clock.__file__)
    assert not location.startswith(os.path.join(os.path.realpath(ROOT), 'sim_clock', '')), location
    expected = os.environ.get('SIM_CLOCK_EXPECTED_PREFIX')
    if expected:
        assert location.startswith(os.path.join(os.path.realpath(expected), '')), location


def test_no_two_modules_share_a_name():
    """A module's file name says which it is: none is named as a module of another part."""
    by_name = {}
    for name in MODULES:
        if not name.endswith('__init__') and name != 'sim_clock':
            by_name.setdefault(name.rsplit('.', 1)[1], []).append(name)
    shared = {short: names for short, names in by_name.items()
              if len(names) > 1 and short != '__init__'}
    assert not shared, shared


#: The folders of test/ that hold tests but mirror no part: the product driven as a user
#: drives it, and the checks of the repository's files.
NOT_PARTS = ('scenarios', 'package')


def _test_files():
    """Yield (folder relative to test/, module names it may test, test file's name)."""
    test_dir = os.path.join(ROOT, 'test')
    for folder, _, files in os.walk(test_dir):
        relative = os.path.relpath(folder, test_dir)
        mirrored = os.path.normpath(os.path.join(PACKAGE, relative))
        modules = {name[:-3] for name in os.listdir(mirrored) if name.endswith('.py')
                   and name != '__init__.py'} if os.path.isdir(mirrored) else set()
        for name in sorted(files):
            if name.startswith('test_') and name.endswith('.py'):
                yield relative, modules, name[:-3]


def test_the_test_folders_mirror_the_package():
    """
    test/<part>/test_<module>.py holds the tests of sim_clock/<part>/<module>.py.

    Each folder of test/ that holds tests is a part of the package (test/node/engine/ is
    sim_clock/node/engine/, test/ itself sim_clock/), ``scenarios/`` or ``package/``. A test
    file in a part's folder is named after one of that part's modules: ``test_<module>.py``,
    or ``test_<module>_<what>.py`` beside it (a tier or a way in of its own). A file named as a
    module's tests is in that module's folder, not among the scenarios or the package checks.
    """
    misplaced = []
    for folder, modules, test in _test_files():
        if folder.split(os.sep)[0] in NOT_PARTS:
            named = [name for module_name, name in ((n.rsplit('.', 1)[-1], n) for n in MODULES)
                     if test == f'test_{module_name}']
            if named:
                misplaced.append(f'{folder}/{test}.py is named as the tests of {named[0]}')
        elif not modules:
            misplaced.append(f'{folder}/{test}.py is in no folder of a part of sim_clock/')
        elif not any(test == f'test_{module}' or test.startswith(f'test_{module}_')
                     for module in modules):
            misplaced.append(f'{folder}/{test}.py names no module of sim_clock/{folder}/')
    assert not misplaced


def test_no_two_test_files_share_a_name():
    """Two test files of one name in two folders cannot both load: pytest imports by name."""
    names = {}
    for folder, _, files in os.walk(os.path.join(ROOT, 'test')):
        for name in files:
            if name.startswith('test_') and name.endswith('.py'):
                names.setdefault(name, []).append(os.path.relpath(folder, ROOT))
    assert not {name: folders for name, folders in names.items() if len(folders) > 1}
