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

"""The runtime's Fast DDS settings: the profile rule, the Fast DDS found here."""

import importlib.metadata

import pytest
from sim_clock.node.runtime import answer_late_clients
from sim_clock.node.runtime import fast_dds_major
from sim_clock.node.runtime import GIVEN_PROFILES
from sim_clock.node.runtime import PROFILE_FILES


@pytest.mark.parametrize('environ, variable, expected', [
    ({'ROS_DISTRO': 'jazzy'}, 'FASTRTPS_DEFAULT_PROFILES_FILE', PROFILE_FILES[2]),
    ({'ROS_DISTRO': 'kilted'}, 'FASTDDS_DEFAULT_PROFILES_FILE', PROFILE_FILES[3]),
    ({'FASTRTPS_DEFAULT_PROFILES_FILE': '/mine.xml'}, 'FASTRTPS_DEFAULT_PROFILES_FILE',
     '/mine.xml'),
    ({'FASTDDS_DEFAULT_PROFILES_FILE': '/mine.xml'}, 'FASTRTPS_DEFAULT_PROFILES_FILE', None),
    ({'RMW_IMPLEMENTATION': 'rmw_cyclonedds_cpp'}, 'FASTRTPS_DEFAULT_PROFILES_FILE', None),
])
def test_our_fast_dds_profile_unless_one_is_given(environ, variable, expected):
    """Our profile, spelled for the Fast DDS here, only where no profiles file was given."""
    given = any(name.endswith('PROFILES_FILE') for name in environ)
    line = answer_late_clients(environ)
    assert environ.get(variable) == expected
    assert (line is None) == ('RMW_IMPLEMENTATION' in environ)
    if given:  # logged at INFO: a step held for readers then waits per heartbeat of that file
        assert line.startswith(GIVEN_PROFILES) and 'heartbeat period' in line, line


def _rclpy_distribution() -> str:
    """Return the ROS distribution whose rclpy wheel is installed here."""
    for distro in ('jazzy', 'kilted'):
        try:
            importlib.metadata.version(f'ros-{distro}-rclpy')
        except importlib.metadata.PackageNotFoundError:
            continue
        return distro
    pytest.skip('no ros-jazzy-rclpy or ros-kilted-rclpy wheel here (a colcon workspace?)')


def test_the_fast_dds_here_is_found():
    """Jazzy's wheels bring Fast DDS 2, Kilted's 3; ROS_DISTRO decides where set."""
    assert fast_dds_major({}) == {'jazzy': 2, 'kilted': 3}[_rclpy_distribution()]
    assert fast_dds_major({'ROS_DISTRO': 'rolling'}) == 3


@pytest.mark.parametrize('major, element', [(2, 'heartbeatPeriod'), (3, 'heartbeat_period')])
def test_our_fast_dds_profiles_raise_the_waits(major, element):
    """Each file sets max_blocking_time 2 s and a 1 ms heartbeat, spelled for its Fast DDS."""
    import xml.etree.ElementTree as ElementTree
    tree = ElementTree.parse(PROFILE_FILES[major])
    namespace = {'dds': 'http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles'}
    writer = tree.find('.//dds:data_writer', namespace)
    assert writer.get('is_default_profile') == 'true'
    blocking = writer.find('.//dds:max_blocking_time', namespace)
    assert blocking.find('dds:sec', namespace).text == '2'
    heartbeat = writer.find(f'dds:times/dds:{element}', namespace)
    assert heartbeat.find('dds:nanosec', namespace).text == '1000000'
