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
Fast DDS transports: UDPv4 only, unless the user chose or rmw_fastrtps decides.

The rule (``sim_clock.node.runtime.avoid_shared_memory``) on environments, then its effect on a
real server process, read from the shared memory it maps.
"""

import os
import re
import time

from harness import ServerProcess
import pytest
from sim_clock.node.runtime import avoid_shared_memory

pytestmark = pytest.mark.process

VARIABLE = 'FASTDDS_BUILTIN_TRANSPORTS'


@pytest.mark.parametrize('environ', [
    {},
    {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SUBNET'},
    {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'OFF', 'ROS_LOCALHOST_ONLY': '0'},
    {'RMW_IMPLEMENTATION': 'rmw_fastrtps_dynamic_cpp'},
])
def test_udp_only_where_nothing_else_decides(environ):
    """Fast DDS, no choice made, a range rmw_fastrtps leaves alone: UDPv4 only, and said."""
    expected = {**environ, VARIABLE: 'UDPv4'}
    line = avoid_shared_memory(environ)
    assert environ == expected
    assert 'UDPv4 only' in line and 'eProsima/Fast-DDS#6485' in line


@pytest.mark.parametrize('environ, said', [
    ({VARIABLE: 'DEFAULT'}, 'as set: FASTDDS_BUILTIN_TRANSPORTS=DEFAULT'),
    ({VARIABLE: 'SHM', 'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SUBNET'}, 'as set'),
    ({'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'}, 'shared memory on'),
    ({'ROS_LOCALHOST_ONLY': '1'}, 'shared memory on'),
    ({'RMW_IMPLEMENTATION': 'rmw_cyclonedds_cpp'}, None),
])
def test_environment_left_alone(environ, said):
    """A user's choice, a LOCALHOST range or another middleware: nothing changes."""
    before = dict(environ)
    line = avoid_shared_memory(environ)
    assert environ == before
    assert line is None if said is None else said in line


def _shared_memory_ports(server: ServerProcess, timeout: float = 30.0) -> list:
    """
    Wait until the server publishes; return the Fast DDS port segments it maps.

    Fast DDS 2 (Jazzy) names them ``/dev/shm/fastrtps_port<n>``, Fast DDS 3 (Kilted)
    ``/dev/shm/fastdds_port<n>``.
    """
    deadline = time.monotonic() + timeout
    while 'publishing /clock' not in server.log():
        assert server.process.poll() is None, server.log()
        assert time.monotonic() < deadline, f'no start in {timeout} s:\n{server.log()}'
        time.sleep(0.05)
    with open(f'/proc/{server.process.pid}/maps') as maps:
        return sorted({line.split()[-1] for line in maps
                       if re.search(r'/dev/shm/fast(rtps|dds)_port', line)})


@pytest.mark.skipif(VARIABLE in os.environ, reason=f'{VARIABLE} is set for this run')
@pytest.mark.parametrize('env, shared_memory', [
    ({'ROS_AUTOMATIC_DISCOVERY_RANGE': 'OFF'}, False),
    ({'ROS_AUTOMATIC_DISCOVERY_RANGE': 'OFF', VARIABLE: 'DEFAULT'}, True),
    ({'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'}, True),
])
def test_server_maps_shared_memory_only_when_chosen(domain_id, tmp_path, env, shared_memory):
    """A real server maps Fast DDS port segments only with DEFAULT or a LOCALHOST range."""
    server = ServerProcess(domain_id, str(tmp_path), env=env)
    try:
        ports = _shared_memory_ports(server)
        assert bool(ports) == shared_memory, (ports, server.log())
    finally:
        assert server.stop() == 0, server.log()


@pytest.mark.parametrize('argv, fast_dds_lines', [
    ((), False),
    (('--ros-args', '--log-level', 'debug'), True),
])
def test_start_up_says_at_info_what_the_server_does(domain_id, tmp_path, argv, fast_dds_lines):
    """At INFO the start-up is one line of what the server does; the Fast DDS ones at DEBUG."""
    server = ServerProcess(domain_id, str(tmp_path), argv=argv)
    try:
        _shared_memory_ports(server)  # waits for the start
    finally:
        assert server.stop() == 0, server.log()
    log = server.log()
    assert ('Fast DDS' in log) is fast_dds_lines, log
    if not fast_dds_lines:
        assert [line for line in log.splitlines() if '[INFO]' in line][:1] == [
            line for line in log.splitlines() if 'publishing /clock: mode=' in line], log
