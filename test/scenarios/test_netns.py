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
Two hosts: the server in one network namespace, a stepping client in another, over a veth.

Each namespace has only loopback and its end of the veth pair (10.77.x.1 and 10.77.x.2), so
DDS must cross the link. Discovery is set up as on two real hosts: ``ROS_AUTOMATIC_DISCOVERY_
RANGE=SUBNET`` and ``ROS_STATIC_PEERS`` naming the other end; ``FASTDDS_BUILTIN_TRANSPORTS=
UDPv4`` keeps Fast DDS off shared memory, which the namespaces would otherwise share (they
share /dev/shm) and which would bypass the link. Skips where namespaces cannot be made (not
root, no iproute2, no CAP_NET_ADMIN).
"""

import os
import shutil
import subprocess

from harness import ChildProcess
from harness import server_executable
from harness import ServerProcess
import pytest

pytestmark = pytest.mark.process

MS = 1_000_000

# Takes sync mode across the link, steps 10 calls of 100 frames and checks /clock.
FAR_CLIENT = """
import os
from harness import TestClient
from sim_clock.srv import GetStatus
client = TestClient(int(os.environ['ROS_DOMAIN_ID']), name='far_client')
status = client.call(GetStatus, 'get_status', timeout=60)
print('status', status.mode, status.sync, flush=True)
# /clock matched before the reset, so that its time 0 is seen (discovery of the topic and of
# the services cross the link separately).
client.wait_for_clock(timeout=60)
assert client.sync_mode_cmd('far', True, 0).result
for call in range(1, 11):
    response = client.step('far', 100)
    assert response.success and response.frame == call * 100, response
client.wait_for_time(1000 * 1_000_000, timeout=60)
expected = list(range(0, 1000 * 1_000_000 + 1, 1_000_000))
print('clock', client.distinct_times_since_reset() == expected,
      len(client.distinct_times_since_reset()), flush=True)
client.close()
"""


def _ip(*args, check=True):
    return subprocess.run(['ip', *args], capture_output=True, text=True, check=check)


@pytest.fixture
def two_hosts():
    """Make two namespaces joined by a veth pair; yield their names and addresses."""
    if shutil.which('ip') is None:
        pytest.skip('iproute2 (the ip command) is not installed')
    if os.geteuid() != 0:
        pytest.skip('network namespaces need root (CAP_NET_ADMIN)')
    tag = f'{os.getpid() % 100_000}'
    hosts = (f'simclk{tag}a', f'simclk{tag}b')
    links = (f'sck{tag}a', f'sck{tag}b')
    subnet = f'10.77.{os.getpid() % 250}'
    addresses = (f'{subnet}.1', f'{subnet}.2')
    made = []
    try:
        for host in hosts:
            result = _ip('netns', 'add', host, check=False)
            if result.returncode:
                pytest.skip(f'cannot make a network namespace: {result.stderr.strip()}')
            made.append(host)
        _ip('link', 'add', links[0], 'type', 'veth', 'peer', 'name', links[1])
        for host, link, address in zip(hosts, links, addresses):
            _ip('link', 'set', link, 'netns', host)
            _ip('-n', host, 'addr', 'add', f'{address}/24', 'dev', link)
            _ip('-n', host, 'link', 'set', 'lo', 'up')
            _ip('-n', host, 'link', 'set', link, 'up')
        yield hosts, addresses
    finally:
        for host in made:  # deleting a namespace deletes its end of the veth, and the pair
            _ip('netns', 'del', host, check=False)


def _dds_env(peer: str) -> dict:
    return {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SUBNET', 'ROS_STATIC_PEERS': peer,
            'FASTDDS_BUILTIN_TRANSPORTS': 'UDPv4'}


@pytest.mark.slow
def test_steps_and_clock_across_a_link(two_hosts, domain_id, tmp_path):
    """A client in the other namespace finds the server, steps it and receives every frame."""
    (server_host, client_host), (server_address, client_address) = two_hosts
    server = ServerProcess(
        domain_id, str(tmp_path), {'sync': True, 'time_step': 0.001},
        executable='ip', argv=['netns', 'exec', server_host, server_executable()],
        env=_dds_env(client_address))
    far = ChildProcess(domain_id, FAR_CLIENT, str(tmp_path), env=_dds_env(server_address),
                       prefix=('ip', 'netns', 'exec', client_host))
    try:
        assert far.expect('status', timeout=90) == 'simulation True'
        assert far.expect('clock', timeout=90) == 'True 1001'
        assert far.finish() == 0, far.output()
    finally:
        far.stop()
        code = server.stop()
    assert code == 0, server.log()
    assert 'sync_mode_cmd from' in server.log() and "'far'" in server.log()


#: Waits until the stack has joined and the recorder stamps and listens on every topic; prints
#: 'ready'; once a line comes on stdin (every writer has matched its readers), steps 20 calls of
#: 10 frames; prints 'stepped'.
STACK_DRIVER = """
import ast, os, sys
from harness import TestClient
from sim_clock.srv import Step
recorder_log, readers = sys.argv[1], ast.literal_eval(sys.argv[2])
client = TestClient(int(os.environ['ROS_DOMAIN_ID']), name='driver')
client.spin_until(lambda: len(client.status_when_ready(timeout=90).participants) == 3,
                  'three participants', timeout=90)
client.spin_until(lambda: 'first /clock received' in open(recorder_log).read(), 'the recorder',
                  timeout=90)
client.spin_until(lambda: all(client.node.count_subscribers(topic) >= count
                              for topic, count in readers.items()), 'the readers', timeout=90)
print('ready', flush=True)
sys.stdin.readline()
for _ in range(20):
    response = client.call(Step, 'step', Step.Request(steps=10), timeout=90)
    assert response.success, response.message
print('stepped', flush=True)
client.close()
"""


@pytest.mark.slow
def test_a_stack_with_a_participant_across_a_link_records_the_same_bag_twice(
        two_hosts, domain_id, tmp_path):
    """Planning runs on the far host, the rest on the near one: identical recordings."""
    from bags import write_test_bag
    from harness import executable
    from test_stack import NODE
    from test_stack import read_recording
    # The Python stack alone (no C relay here): its topics, and their readers with the recorder.
    topics = ('/stage1', '/stage2', '/ping', '/pong', '/result')
    readers = {'/stage1': 3, '/stage2': 2, '/ping': 2, '/pong': 2, '/result': 1}
    (near, far), (near_address, far_address) = two_hosts
    bag = str(tmp_path / 'bag')
    write_test_bag(bag, 'sqlite3')
    near_env, far_env = _dds_env(far_address), _dds_env(near_address)
    recordings = []
    for run in (1, 2):
        output = str(tmp_path / f'recording{run}')
        player = ServerProcess(
            domain_id, str(tmp_path), {'sync': True, 'time_step': 0.01}, executable='ip',
            argv=['netns', 'exec', near, executable('bag_player'), bag, '--start-at-zero',
                  '--no-progress'], env=near_env)
        matched = ('--readers', *(f'{topic}={count}' for topic, count in readers.items()))
        nodes = [ChildProcess(domain_id, NODE, str(tmp_path), args=(role, *matched),
                              env=far_env if role == 'planning' else near_env,
                              prefix=('ip', 'netns', 'exec', far if role == 'planning' else near))
                 for role in ('perception', 'planning', 'control')]
        recorder = ServerProcess(
            domain_id, str(tmp_path), executable='ip',
            argv=['netns', 'exec', near, executable('recorder'), output, '--until', '2.0',
                  '-t', *topics], env=near_env)
        driver = ChildProcess(domain_id, STACK_DRIVER, str(tmp_path),
                              args=(recorder.log_path, repr(readers)), env=near_env,
                              prefix=('ip', 'netns', 'exec', near))
        try:
            driver.expect('ready', timeout=300)
            for node in nodes:  # each writer matched its readers, across the link too
                node.expect('matched', timeout=90)
            driver.send('go')
            assert driver.expect('stepped', timeout=300) == '', driver.output()
            assert recorder.process.wait(60) == 0, recorder.log()
        finally:
            driver.stop()
            for node in nodes:
                node.stop()
            player.stop()
            recorder.stop()
        recordings.append(read_recording(output))
    first, second = recordings
    assert set(first) == set(topics) and all(first[topic] for topic in topics)
    for topic in topics:
        assert first[topic] == second[topic], f'{topic} differs between two runs'
