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
from sim_clock.node.runtime import loopback_udp_only
from sim_clock.process.fastdds_profiles import answer_late_clients
from sim_clock.process.fastdds_profiles import fast_dds_major
from sim_clock.process.fastdds_profiles import GIVEN_PROFILES
from sim_clock.process.fastdds_profiles import LOOPBACK_PROFILE_FILES
from sim_clock.process.fastdds_profiles import PROFILE_FILES

pytestmark = pytest.mark.fast


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


@pytest.mark.parametrize('files', [PROFILE_FILES, LOOPBACK_PROFILE_FILES])
@pytest.mark.parametrize('major, element', [(2, 'heartbeatPeriod'), (3, 'heartbeat_period')])
def test_our_fast_dds_profiles_raise_the_waits(major, element, files):
    """Each file sets max_blocking_time 2 s and a 1 ms heartbeat, spelled for its Fast DDS."""
    import xml.etree.ElementTree as ElementTree
    tree = ElementTree.parse(files[major])
    namespace = {'dds': 'http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles'}
    writer = tree.find('.//dds:data_writer', namespace)
    assert writer.get('is_default_profile') == 'true'
    blocking = writer.find('.//dds:max_blocking_time', namespace)
    assert blocking.find('dds:sec', namespace).text == '2'
    heartbeat = writer.find(f'dds:times/dds:{element}', namespace)
    assert heartbeat.find('dds:nanosec', namespace).text == '1000000'


@pytest.mark.parametrize('distro, major', [('jazzy', 2), ('kilted', 3)])
def test_the_recorder_takes_loopback_udp_under_a_localhost_range(distro, major):
    """LOCALHOST: SYSTEM_DEFAULT with our UDPv4-on-127.0.0.1 profile, which is then ours."""
    environ = {'ROS_DISTRO': distro, 'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'}
    assert 'UDPv4 on 127.0.0.1' in loopback_udp_only(environ)
    variable = {2: 'FASTRTPS_DEFAULT_PROFILES_FILE', 3: 'FASTDDS_DEFAULT_PROFILES_FILE'}[major]
    assert environ == {'ROS_DISTRO': distro, 'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SYSTEM_DEFAULT',
                       variable: LOOPBACK_PROFILE_FILES[major]}
    line = answer_late_clients(environ)
    assert not line.startswith(GIVEN_PROFILES)
    assert environ[variable] == LOOPBACK_PROFILE_FILES[major]


@pytest.mark.parametrize('environ', [
    {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST', 'FASTRTPS_DEFAULT_PROFILES_FILE': '/mine.xml'},
    {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST', 'FASTDDS_BUILTIN_TRANSPORTS': 'SHM'},
    {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SUBNET'},
    {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST', 'RMW_IMPLEMENTATION': 'rmw_cyclonedds_cpp'},
])
def test_the_recorder_leaves_a_users_choice_and_other_ranges_alone(environ):
    """A profiles file or transports given, another range or middleware: the range stays."""
    range_before = environ['ROS_AUTOMATIC_DISCOVERY_RANGE']
    loopback_udp_only(environ)
    assert environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] == range_before
    assert LOOPBACK_PROFILE_FILES[2] not in environ.values()
    assert LOOPBACK_PROFILE_FILES[3] not in environ.values()
