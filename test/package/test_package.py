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
import importlib.util
import os

from catkin_pkg.package import parse_package
from harness import ROOT
import pytest
from sim_clock.core import settings
import yaml

LAUNCH_FILE = os.path.join(ROOT, 'launch', 'sim_clock.launch.py')
BAG_LAUNCH_FILE = os.path.join(ROOT, 'launch', 'bag_player.launch.py')
#: launch file -> the parameters it offers as arguments: the server's, and the player's
LAUNCH_PARAMETERS = {LAUNCH_FILE: set(settings.DEFAULTS),
                     # A bag player's time is the bag's: its start_time stays 0.
                     BAG_LAUNCH_FILE: set(settings.DEFAULTS) - {'start_time', 'max_clock_rate'}
                     | {'loop'}}


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


def test_manifest_declares_what_the_code_imports():
    """package.xml is format 3 and declares every ROS package the code uses."""
    package = parse_package(os.path.join(ROOT, 'package.xml'))
    assert package.package_format == 3
    declared = {dep.name for dep in package.exec_depends + package.build_depends}
    assert {'rclpy', 'rcl_interfaces', 'rosgraph_msgs', 'std_srvs', 'builtin_interfaces',
            'rosidl_default_runtime', 'launch', 'launch_ros'} <= declared
    assert package.get_build_type() == 'ament_cmake'


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
