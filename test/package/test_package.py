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

"""The package's files agree with each other: manifest, interfaces, config and launch file."""

import ast
import copy
import importlib.util
import os
import re
import sys

from catkin_pkg.package import parse_package
from harness import ROOT
import pytest
from sim_clock.bag.player import PLAYER_PARAMETERS
from sim_clock.core import settings
from sim_clock.process.launch_arguments import FROM_PARAMS_FILE
from sim_clock.wire.names import RECORDER_NODE_NAME
import yaml

pytestmark = pytest.mark.fast

LAUNCH_FILE = os.path.join(ROOT, 'launch', 'sim_clock.launch.py')
BAG_LAUNCH_FILE = os.path.join(ROOT, 'launch', 'bag_player.launch.py')
#: launch file -> the parameters it offers as arguments: the server's, and the player's
LAUNCH_PARAMETERS = {LAUNCH_FILE: set(settings.DEFAULTS),
                     BAG_LAUNCH_FILE: set(settings.DEFAULTS) | set(PLAYER_PARAMETERS)}


@pytest.mark.parametrize('name', sorted(
    f'{folder}/{name}' for folder in ('srv', 'msg')
    for name in os.listdir(os.path.join(ROOT, folder))))
def test_every_interface_field_is_commented(name):
    """Each field of our services and messages has a trailing comment: meaning and limits."""
    with open(os.path.join(ROOT, name)) as interface:
        fields = [line for line in interface.read().splitlines()
                  if line.strip() and not line.startswith('#') and line.strip() != '---']
    assert fields
    for field in fields:
        assert '#' in field and field.split('#', 1)[1].strip(), field


def test_every_interface_is_built():
    """CMakeLists.txt generates every .srv and .msg of the package."""
    with open(os.path.join(ROOT, 'CMakeLists.txt')) as cmake:
        text = cmake.read()
    for folder in ('srv', 'msg'):
        for name in os.listdir(os.path.join(ROOT, folder)):
            assert f'"{folder}/{name}"' in text, name


#: Python modules that are not ROS packages -> the rosdep key that installs them.
ROSDEP_KEYS = {
    'yaml': 'python3-yaml',
    'aiohttp': 'python3-aiohttp',
    'rosbags': 'python3-rosbags-pip',
    # rosbags' sqlite3 reader, installed with it; rosdep has no key of its own for it.
    'apsw': 'python3-rosbags-pip',
    # rosbags' zstd before Python 3.14 (sim_clock/bag/storage.py decompresses with it too).
    'backports': 'python3-rosbags-pip',
    'pytest': 'python3-pytest',
}
#: Modules loaded only by pytest (sim_clock.client.pytest_plugin): a test_depend is enough.
TEST_ONLY = {'pytest'}
#: What the package's Python code is: the modules and the launch files.
SOURCES = [os.path.join(ROOT, 'sim_clock'), os.path.join(ROOT, 'launch')]


def _optional(tree) -> set:
    """Return the import nodes inside a ``try`` that catches ImportError (optional ones)."""
    optional = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
                isinstance(handler.type, ast.Name)
                and handler.type.id in ('ImportError', 'ModuleNotFoundError')
                for handler in node.handlers):
            optional.update(id(child) for statement in node.body for child in ast.walk(statement))
    return optional


def imported_packages(paths) -> dict:
    """Return {top-level module: a file importing it} of the non-optional imports in ``paths``."""
    found = {}
    for top in paths:
        for folder, _, files in os.walk(top):
            for name in sorted(files):
                if not name.endswith('.py'):
                    continue
                path = os.path.join(folder, name)
                with open(path) as source:
                    tree = ast.parse(source.read())
                optional = _optional(tree)
                for node in ast.walk(tree):
                    if id(node) in optional:
                        continue
                    if isinstance(node, ast.Import):
                        modules = [alias.name for alias in node.names]
                    elif isinstance(node, ast.ImportFrom) and not node.level:
                        modules = [node.module]
                    else:
                        continue
                    for module in modules:
                        found.setdefault(module.split('.')[0], os.path.relpath(path, ROOT))
    return {module: path for module, path in found.items()
            if module not in sys.stdlib_module_names and module != 'sim_clock'}


def missing_depends(package, imports: dict) -> list:
    """Return 'module (file): <kind> key' for each import that package.xml does not declare."""
    run = {dep.name for dep in package.exec_depends + package.build_export_depends}
    test = {dep.name for dep in package.test_depends} | run
    missing = []
    for module, path in sorted(imports.items()):
        key = ROSDEP_KEYS.get(module, module)
        if key not in (test if module in TEST_ONLY else run):
            kind = 'test_depend' if module in TEST_ONLY else 'exec_depend'
            missing.append(f'{module} ({path}): <{kind}>{key}</{kind}>')
    return missing


def cmake_packages() -> set:
    """Return the packages CMakeLists.txt finds with find_package (CMake's own modules aside)."""
    with open(os.path.join(ROOT, 'CMakeLists.txt')) as cmake:
        names = set(re.findall(r'find_package\((\w+)', cmake.read()))
    return names - {'Python3', 'Threads'}


def test_manifest_declares_what_the_code_imports():
    """package.xml declares every package the code imports and the build finds, by kind."""
    package = parse_package(os.path.join(ROOT, 'package.xml'))
    assert package.package_format == 3
    assert package.get_build_type() == 'ament_cmake'
    assert missing_depends(package, imported_packages(SOURCES)) == []
    declared = {dep.name for dep in package.build_depends + package.buildtool_depends
                + package.test_depends}
    assert cmake_packages() - declared == set()


def test_manifest_check_fails_on_an_import_without_its_depend(tmp_path):
    """The check above names an import added without its depend, optional imports aside."""
    package = parse_package(os.path.join(ROOT, 'package.xml'))
    (tmp_path / 'new_module.py').write_text(
        'import tf2_ros\n'
        'from rosbags.highlevel import AnyReader\n'
        'try:\n'
        '    import nav2_msgs\n'
        'except ImportError:\n'
        '    nav2_msgs = None\n')
    imports = imported_packages(SOURCES + [str(tmp_path)])
    missing = missing_depends(package, imports)
    assert len(missing) == 1 and missing[0].startswith('tf2_ros ('), missing
    assert missing[0].endswith('<exec_depend>tf2_ros</exec_depend>')
    without_rosbags = copy.deepcopy(package)
    without_rosbags.exec_depends = [dep for dep in package.exec_depends
                                    if dep.name != 'python3-rosbags-pip']
    reported = {line.split(' ')[0]: line for line in missing_depends(without_rosbags, imports)}
    assert {'rosbags', 'apsw'} <= set(reported), reported
    assert all(reported[module].endswith('<exec_depend>python3-rosbags-pip</exec_depend>')
               for module in ('rosbags', 'apsw'))


def test_config_holds_every_parameter_with_its_default():
    """config/sim_clock.yaml sets every parameter, at the server's defaults."""
    with open(os.path.join(ROOT, 'config', 'sim_clock.yaml')) as config:
        values = yaml.safe_load(config)['/**']['ros__parameters']
    assert values == settings.DEFAULTS


def _launch_parameter_arguments(path):
    with open(path) as launch_file:
        tree = ast.parse(launch_file.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.targets[0].id == 'PARAMETER_ARGUMENTS':
            return ast.literal_eval(node.value)
    raise AssertionError('PARAMETER_ARGUMENTS not found')


@pytest.mark.parametrize('path', sorted(LAUNCH_PARAMETERS), ids=os.path.basename)
def test_launch_file_has_an_argument_per_parameter(path):
    """Each launch file offers every parameter of its node as an argument with a description."""
    arguments = _launch_parameter_arguments(path)
    assert set(arguments) == LAUNCH_PARAMETERS[path]
    assert all(arguments.values())


def test_the_bag_docs_list_every_argument_of_the_bag_launch_file():
    """doc/bags.md's table of launch arguments names each one ``--show-args`` lists."""
    path = os.path.join(ROOT, 'launch', 'bag_player.launch.py')
    with open(os.path.join(ROOT, 'doc', 'bags.md')) as bags:
        text = bags.read()
    table = text[text.index('| `bag` |'):]
    table = table[:table.index('\n\n')]
    named = set(re.findall(r'`([a-z_]+)`', table))
    missing = sorted(set(_launch_parameter_arguments(path)) - named)
    assert not missing, f'doc/bags.md lists no launch argument {missing}'


@pytest.mark.parametrize('path', sorted(LAUNCH_PARAMETERS), ids=os.path.basename)
def test_launch_description_declares_every_argument(path):
    """generate_launch_description() declares every parameter, use_sim_time and params_file."""
    if importlib.util.find_spec('launch_ros') is None:
        pytest.skip('launch and launch_ros are not installed (not on PyPI; see README)')
    from launch.actions import DeclareLaunchArgument
    spec = importlib.util.spec_from_file_location('sim_clock_launch', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    declared = {
        action.name: action.description
        for action in module.generate_launch_description().entities
        if isinstance(action, DeclareLaunchArgument)}
    assert LAUNCH_PARAMETERS[path] | {'use_sim_time', 'params_file'} <= set(declared)
    assert all(declared.values())


@pytest.mark.parametrize('path', sorted(LAUNCH_PARAMETERS), ids=os.path.basename)
def test_launch_arguments_show_the_real_defaults(path):
    """``--show-args``: each parameter's default is params_file, and its description the value."""
    if importlib.util.find_spec('launch_ros') is None:
        pytest.skip('launch and launch_ros are not installed (not on PyPI; see README)')
    from launch import LaunchContext
    from launch.utilities import perform_substitutions
    spec = importlib.util.spec_from_file_location('sim_clock_launch', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    arguments = {argument.name: argument
                 for argument in module.generate_launch_description().get_launch_arguments()}
    defaults = dict(settings.DEFAULTS, loop=False, use_sim_time=False)
    for name in LAUNCH_PARAMETERS[path] | {'use_sim_time'}:
        argument = arguments[name]
        assert perform_substitutions(LaunchContext(), argument.default_value) == FROM_PARAMS_FILE
        shown, default = argument.description.rsplit(' else ', 1)[1][:-1], defaults[name]
        if isinstance(default, str):
            assert shown == (default or "''"), name
        else:
            assert yaml.safe_load(shown) == default, name


def test_the_docs_name_the_executables_nodes_as_they_are():
    """
    A node name the docs give in ``expected_participants`` is the executable's own.

    The recorder is ``/sim_clock_recorder``; the docs once named it ``/recorder``, and a stack
    that expected that name waited for a node that never came.
    """
    assert RECORDER_NODE_NAME == 'sim_clock_recorder'
    pages = [os.path.join(ROOT, 'README.md')] + [
        os.path.join(ROOT, 'doc', name) for name in sorted(os.listdir(os.path.join(ROOT, 'doc')))
        if name.endswith('.md')]
    wrong = []
    for page in pages:
        with open(page) as text:
            for number, line in enumerate(text, 1):
                if re.search(r"['`/ ]/recorder\b(?![./])", line):
                    wrong.append(f'{os.path.relpath(page, ROOT)}:{number}: {line.strip()}')
    assert wrong == []
