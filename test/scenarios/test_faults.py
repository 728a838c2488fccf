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
Faults with real processes.

A holder killed mid-run, the server killed and restarted, a client gone in the middle of a
long step, a client that starts before the server.
"""

import signal
import time

from harness import ChildProcess
from harness import ServerProcess
from harness import stamp_ns
from harness import status_tuple
from harness import UDP_LOOPBACK_ENV
import pytest
from sim_clock.srv import GetStatus

pytestmark = pytest.mark.process

MS = 1_000_000

# The processes that get SIGKILLed here talk UDP on 127.0.0.1 only (UDP_LOOPBACK_ENV). Over
# Fast DDS shared memory (what rmw_fastrtps installs for a LOCALHOST discovery range, whatever
# the server asks) a process SIGKILLed while it takes a sample can freeze the server's next
# send to it for good, a Fast DDS 2.14 bug (eProsima/Fast-DDS#6485; README, Transports). With
# the ghost below on shared memory its test hit it once in eight runs under load: the server
# stuck in the step, deaf to SIGINT. The server cannot avoid that under LOCALHOST; these tests
# are about the rest.

# Takes sync mode as argv[1], then steps one frame at a time until it is killed.
STEPPING_HOLDER = """
import os
import sys
from harness import TestClient
user_id = sys.argv[1]
client = TestClient(int(os.environ['ROS_DOMAIN_ID']), name='holder', subscribe_clock=False)
assert client.sync_mode_cmd(user_id, True, 0).result
count = 0
while True:
    assert client.step(user_id, 1).success
    count += 1
    if count == 20:
        print('stepping', flush=True)
"""

# Takes sync mode as 'ghost', steps once (the request path is matched both ways), sends one
# step(10000) and SIGKILLs itself as soon as it sees a frame of that step on /clock, that is
# while the server is still publishing the others. It prints the Fast DDS shared memory it has
# mapped first: none is expected under UDP_LOOPBACK_ENV.
GHOST = """
import os
import signal
from harness import TestClient
from sim_clock.srv import Step
client = TestClient(int(os.environ['ROS_DOMAIN_ID']), name='ghost')
with open('/proc/self/maps') as maps:
    print('mapped', sorted({line.split()[-1] for line in maps if '/dev/shm/fastrtps' in line}),
          flush=True)
assert client.sync_mode_cmd('ghost', True, 0).result
assert client.step('ghost', 1).success
client._clients['/sim_clock/step'].call_async(Step.Request(user_id='ghost', steps=10000))
client.wait_for_clock(lambda t: t > 1_000_000, 'a frame of the step')
os.kill(os.getpid(), signal.SIGKILL)
"""


# A client that starts before any server: waits for get_status with a timeout, then reports.
EARLY_CLIENT = """
import os
import time
from harness import TestClient
from sim_clock.srv import GetStatus
client = TestClient(int(os.environ['ROS_DOMAIN_ID']), name='early', subscribe_clock=False)
start = time.monotonic()
try:
    client.call(GetStatus, 'get_status', timeout=0.5)
except AssertionError as error:
    print('timed out', f'{time.monotonic() - start:.2f}', 'timed out after' in str(error),
          flush=True)
print('waiting', flush=True)
status = client.call(GetStatus, 'get_status', timeout=60)
print('answered', status.mode, status.frame, flush=True)
client.close()
"""


def test_holder_killed_mid_run_both_ways_out(start_server, client, domain_id, tmp_path):
    """A stepping holder SIGKILLed: the server answers on; the lease and the override free it."""
    start_server({'publish_rate': 50.0})
    client.status_when_ready()  # the first contact, while the machine is calm (see below)
    for way_out in ('set_sync false', 'owner_timeout'):
        if way_out == 'owner_timeout':
            assert client.set_parameter('owner_timeout', 1.0).successful
        holder = ChildProcess(domain_id, STEPPING_HOLDER, str(tmp_path), args=('doomed',),
                              env=UDP_LOOPBACK_ENV)
        try:
            holder.expect('stepping', timeout=60)
        finally:
            holder.kill()
        killed_at = time.monotonic()
        status = client.status()  # answered at once, whatever the holder's fate
        assert status.owner == 'doomed' or way_out == 'owner_timeout'
        epoch = status.epoch
        if way_out == 'owner_timeout':
            client.spin_until(lambda: client.status().owner == '', 'the hold to lapse')
            assert time.monotonic() - killed_at < 10
            status = client.status()
            # No reset: sync stays on and the holder's frames (20 at least) are kept.
            assert (status.sync, status.epoch) == (True, epoch) and status.frame >= 20
            assert client.step('rescuer', 1).success
        else:
            assert not client.sync_mode_cmd('rescuer', True, 0).result
            override = client.set_sync(False)
            assert override.success and "'doomed'" in override.message
        taken = client.sync_mode_cmd('rescuer', True, 0)
        assert taken.result, taken.message
        assert client.step('rescuer', 3).success
        assert client.sync_mode_cmd('rescuer', False, 0).result  # free for the next round


def test_server_killed_and_restarted(domain_id, tmp_path, client):
    """SIGKILL the server: calls time out instead of hanging; a restart is seen and announced."""
    log_dir = str(tmp_path)
    # SIGKILLed below: over UDP only, as every process killed in this file.
    first = ServerProcess(domain_id, log_dir, {'sync': True, 'time_step': 0.001},
                          env=UDP_LOOPBACK_ENV)
    second = None
    try:
        client.status_when_ready()
        assert client.step('', 50).success
        before = client.status()
        assert (before.frame, before.epoch) == (50, 0)
        first.process.send_signal(signal.SIGKILL)
        first.process.wait(15)
        start = time.monotonic()
        with pytest.raises(AssertionError, match='timed out after 2'):
            client.call(GetStatus, 'get_status', timeout=2)
        assert time.monotonic() - start < 5
        seen = len(client.clocks)
        second = ServerProcess(domain_id, log_dir, {'sync': True, 'time_step': 0.001})
        # The new server announces its time zero on /clock at once.
        client.spin_until(lambda: 0 in client.times()[seen:], '/clock at 0 from the new server',
                          timeout=30)
        after = client.status_when_ready()  # a first contact with the new server
        # A client sees the restart: frame and time went back to zero without an epoch bump.
        assert (after.frame, stamp_ns(after.clock), after.epoch) == (0, 0, 0)
        assert after.frame < before.frame
        response = client.step('', 1)
        assert response.success and response.frame == 1
    finally:
        first.stop()
        if second is not None:
            assert second.stop() == 0, second.log()


def test_client_gone_during_long_step(start_server, client, domain_id, tmp_path):
    """A holder killed while its step(10000) is served: every frame is published, once."""
    server = start_server({'time_step': 0.001, 'owner_timeout': 2.0})
    # The first contact with the server's get_status, while the machine is calm: made only
    # after the 10^4 frames, it went unanswered for 10 s at a load average of 10 (the answer
    # to a new client is lost until the server's response writer has matched its reader).
    client.status_when_ready()
    # Our /clock subscription is matched before the ghost's first frame is published.
    client.wait_for_clock(lambda t: True, 'the idle /clock')
    ghost = ChildProcess(domain_id, GHOST, str(tmp_path), env=UDP_LOOPBACK_ENV)
    try:
        assert ghost.expect('mapped', timeout=60) == '[]'
        assert ghost.process.wait(60) == -signal.SIGKILL, ghost.finish()
    finally:
        ghost.kill()
    try:
        client.wait_for_time(10_001 * MS, timeout=60)
    except AssertionError as error:
        last = client.clocks[-1][1] if client.clocks else None
        raise AssertionError(f'{error}; {len(client.clocks)} /clock messages came, the last at '
                             f'{last} ns; status {status_tuple(client.status())}:\n'
                             f'{server.log()}') from None
    try:
        client.spin_until(lambda: client.status().owner == '', 'the dead holder to lapse')
    except AssertionError as error:  # the server's side, to find why it did not answer
        raise AssertionError(f'{error}\nserver:\n{server.log()}') from None
    taken = client.sync_mode_cmd('next', True, 0)
    assert taken.result and taken.frame == 10_001, taken  # taken without a reset
    status = client.status()
    assert (status.frame, stamp_ns(status.clock), status.epoch) == (10_001, 10_001 * MS, 1)
    response = client.step('next', 1)
    assert response.frame == 10_002
    client.wait_for_time(10_002 * MS)
    assert client.distinct_times_since_reset() == list(range(0, 10_002 * MS + 1, MS))


def test_client_started_before_server(start_server, domain_id, tmp_path):
    """A client up before the server: a short timeout fails cleanly, a long one then works."""
    early = ChildProcess(domain_id, EARLY_CLIENT, str(tmp_path))
    try:
        timed_out = early.expect('timed out', timeout=60).split()
        assert float(timed_out[0]) < 3 and timed_out[1] == 'True', timed_out
        early.expect('waiting', timeout=30)
        start_server()
        assert early.expect('answered', timeout=60).split()[0] == 'simulation'
        assert early.finish() == 0, early.output()
    finally:
        early.stop()
