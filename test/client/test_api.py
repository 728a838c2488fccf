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
The client's API on rclpy's names, the old ones kept one release with a warning.

``timeout_sec`` where rclpy says it (the client, its waits, the harness), ``period_sec`` for the
participant; ``timeout`` and ``period`` still work and say they are deprecated. ``with
SimClockClient()`` owns the client only; ``sync_mode()`` holds sync mode for a block; a block
written for the ``with`` that took sync mode still works, with a warning. No server: a fake
answers the client's calls.
"""

import subprocess
import warnings

import pytest
from rcl_interfaces.msg import SetParametersResult
import rclpy
from sim_clock.client import ControlResult
from sim_clock.client import ResetResult
from sim_clock.client import SimClockClient
from sim_clock.client import SimClockClosed
from sim_clock.client import SimClockRefused
from sim_clock.client import SimClockTimeout
from sim_clock.client.lockstep_harness import LockstepHarness
from sim_clock.client.participant import Participant

MS = 1_000_000

pytestmark = pytest.mark.dds


def test_timeout_sec_is_the_clients_argument_and_timeout_still_works_with_a_warning(context):
    with warnings.catch_warnings():
        warnings.filterwarnings('error', message='.*timeout_sec')  # the new name: no warning
        client = SimClockClient(context=context, timeout_sec=2.5)
        assert client.timeout_sec == 2.5
        assert client.wait_for_services(['step'], timeout_sec=0) == ['step']
        with pytest.raises(SimClockTimeout, match='within 0.01 s'):
            client.spin_until(lambda: False, timeout_sec=0.01)
        client.close()
    with pytest.warns(DeprecationWarning, match='timeout= is deprecated: use timeout_sec='):
        old = SimClockClient(context=context, timeout=1.5)
    assert old.timeout_sec == 1.5
    with pytest.warns(DeprecationWarning, match='use timeout_sec'):
        assert old.timeout == 1.5
    with pytest.warns(DeprecationWarning, match='use timeout_sec'):
        assert old.wait_for_services(['step'], timeout=0) == ['step']
    with pytest.warns(DeprecationWarning, match='use timeout_sec'):
        with pytest.raises(SimClockTimeout, match='within 0.01 s'):
            old.spin_until(lambda: False, timeout=0.01)
    old.close()


# -- what the client asks, with the server answered by a fake -------------------------------

class FakeServer:
    """Answer a client's calls in place of a clock server: sync mode, steps, the Triggers."""

    def __init__(self, sync=False):
        self.mode, self.sync, self.owner, self.epoch = 'simulation', sync, '', 0
        self.frame, self.time_step_ns = 0, 10 * MS
        self.calls = []

    def __call__(self, srv_type, name, request, patience=1):
        self.calls.append(name)
        return getattr(self, name)(srv_type, request)

    def get_status(self, srv_type, request):
        return srv_type.Response(mode=self.mode, sync=self.sync, owner=self.owner,
                                 epoch=self.epoch, frame=self.frame,
                                 time_step_ns=self.time_step_ns)

    def sync_mode_cmd(self, srv_type, request):
        if request.start_sync_mode:
            self.sync, self.owner = True, request.user_id or 'assigned'
            if request.time_step:
                self.time_step_ns = request.time_step * MS
        else:
            self.sync, self.owner = False, ''
        return srv_type.Response(result=True, user_id=self.owner or request.user_id)

    def step(self, srv_type, request):
        self.frame = request.target_frame
        return srv_type.Response(success=True, frame=self.frame, epoch=self.epoch)

    def set_parameters(self, srv_type, request):
        for parameter in request.parameters:
            if parameter.name == 'time_step':
                self.time_step_ns = round(parameter.value.double_value * 1e9)
        return srv_type.Response(results=[SetParametersResult(successful=True)])

    def set_sync(self, srv_type, request):
        self.sync = request.data
        return srv_type.Response(success=True, message=f'sync {"on" if request.data else "off"}')

    def pause(self, srv_type, request):
        return srv_type.Response(success=True, message='paused at 0 ns')

    def resume(self, srv_type, request):
        return srv_type.Response(success=True, message='resumed at 0 ns')

    def reset(self, srv_type, request):
        self.epoch += 1
        return srv_type.Response(success=True, message=f'time reset to 0 ns (epoch {self.epoch})')

    def leave(self, srv_type, request):
        return srv_type.Response(success=True, message=f'{request.name!r} left')


def _client(context, server: FakeServer, **options) -> SimClockClient:
    client = SimClockClient(context=context, **options)
    client._call = server
    return client


def test_with_owns_the_client_only_and_closes_it(context):
    """``with SimClockClient()`` asks the server nothing; its end closes the client."""
    server = FakeServer()
    with warnings.catch_warnings():
        warnings.simplefilter('error', DeprecationWarning)
        with _client(context, server) as client:
            pass
    assert server.calls == []
    client._call = SimClockClient._call.__get__(client)
    with pytest.raises(SimClockClosed, match='closed'):
        client.status()


def test_sync_mode_holds_for_its_block_and_puts_back_what_it_found(context):
    """Taken on entry with the block's time_step; released and time_step put back at its end."""
    server = FakeServer()
    with warnings.catch_warnings():
        warnings.simplefilter('error', DeprecationWarning)
        with _client(context, server) as client:
            with client.sync_mode(time_step=0.002) as held:
                assert held is client
                assert (server.sync, server.owner, server.time_step_ns) == (
                    True, 'assigned', 2 * MS)
                assert client.step(3).frame == 3
            assert (server.sync, server.owner, server.time_step_ns) == (False, '', 10 * MS)
            with pytest.raises(KeyError):
                with client.sync_mode():
                    raise KeyError('the block fails')
            assert (server.sync, server.owner) == (False, '')  # given back all the same


def test_sync_mode_found_on_turns_it_on_again(context):
    """A server found with sync on (no holder) gets it on again after the release."""
    server = FakeServer(sync=True)
    with _client(context, server) as client:
        with client.sync_mode():
            assert server.owner == 'assigned'
        assert (server.sync, server.owner) == (True, '')
        assert server.calls[-1] == 'set_sync'


def test_a_with_block_stepping_without_sync_mode_takes_it_as_before_with_a_warning(context):
    """Deprecated: the first step of a block, the server's sync off, takes sync mode."""
    server = FakeServer()
    with pytest.warns(DeprecationWarning, match=r'with client.sync_mode\(time_step=...\)'):
        with _client(context, server) as client:
            assert client.step().frame == 1
            assert server.owner == 'assigned'
    assert (server.sync, server.owner) == (False, '')


def test_a_with_block_finding_sync_on_steps_without_taking_it(context):
    """Sync on with no holder: the step needs no sync mode, and nothing warns."""
    server = FakeServer(sync=True)
    with warnings.catch_warnings():
        warnings.simplefilter('error', DeprecationWarning)
        with _client(context, server) as client:
            assert client.step().frame == 1
    assert (server.sync, server.owner) == (True, '')
    assert 'sync_mode_cmd' not in server.calls


def test_a_client_made_with_time_step_takes_sync_mode_on_entry_with_warnings(context):
    """Deprecated: ``SimClockClient(time_step=)``, then ``with`` takes sync mode on entry."""
    server = FakeServer(sync=True)
    with pytest.warns(DeprecationWarning, match=r'SimClockClient\(time_step=\) is deprecated'):
        client = _client(context, server, time_step=0.002)
    with pytest.warns(DeprecationWarning, match='taking sync mode is deprecated'):
        client.__enter__()
    assert (server.owner, server.time_step_ns) == ('assigned', 2 * MS)
    client.__exit__(None, None, None)
    assert (server.sync, server.owner, server.time_step_ns) == (True, '', 10 * MS)


def test_acquire_in_a_with_block_is_the_new_way_and_warns_of_nothing(context):
    """acquire() and release() in a block: the first step after them takes nothing."""
    server = FakeServer()
    server.step = lambda srv_type, request: srv_type.Response(
        success=False, message='not in sync mode')
    with warnings.catch_warnings():
        warnings.simplefilter('error', DeprecationWarning)
        with _client(context, server) as client:
            client.acquire()
            client.release()
            with pytest.raises(SimClockRefused, match='not in sync mode'):
                client.step()
    assert server.calls.count('sync_mode_cmd') == 2


def test_the_control_calls_return_typed_results(context):
    """pause, resume, set_sync and leave: ControlResult; reset: ResetResult with the epoch."""
    server = FakeServer()
    with _client(context, server) as client:
        assert client.pause() == ControlResult('paused at 0 ns')
        assert client.resume() == ControlResult('resumed at 0 ns')
        assert client.set_sync(True) == ControlResult('sync on')
        assert client.leave('planner') == ControlResult("'planner' left")
        assert client.reset() == ResetResult('time reset to 0 ns (epoch 1)', epoch=1)


def test_participant_period_sec_and_the_old_period_with_a_warning(context, monkeypatch):
    """Participant(period_sec=) joins with that period in ns; period= still does, and warns."""
    joined = []

    class Joined(Exception):
        pass

    def join(client, name, period_ns, *args):
        joined.append(period_ns)
        raise Joined  # no server: the join is where this test ends

    monkeypatch.setattr(SimClockClient, 'join', join)
    node = rclpy.create_node('period_names', context=context)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('error', DeprecationWarning)
            with pytest.raises(Joined):
                Participant(node, period_sec=0.05)
        with pytest.warns(DeprecationWarning, match='period= is deprecated: use period_sec='):
            with pytest.raises(Joined):
                Participant(node, period=0.02)
    finally:
        node.destroy_node()
    assert joined == [50 * MS, 20 * MS]


class _Exited:
    """A clock server process that has ended already: nothing to stop."""

    pid = 0

    def __init__(self, *args, **kwargs):
        pass

    def poll(self):
        return 0


def test_harness_timeout_sec_and_the_old_timeout_with_a_warning(domain_id, monkeypatch, tmp_path):
    """LockstepHarness(timeout_sec=); timeout= and .timeout still work, with a warning."""
    monkeypatch.setattr(subprocess, 'Popen', _Exited)
    monkeypatch.setattr(SimClockClient, 'acquire', lambda client, time_step=None: 'harness')
    with warnings.catch_warnings():
        warnings.simplefilter('error', DeprecationWarning)
        with LockstepHarness(domain_id, str(tmp_path), timeout_sec=2.5) as harness:
            assert harness.timeout_sec == harness.client.timeout_sec == 2.5
    with pytest.warns(DeprecationWarning, match='timeout= is deprecated: use timeout_sec='):
        old = LockstepHarness(domain_id, str(tmp_path), timeout=1.5)
    with old:
        assert old.client.timeout_sec == 1.5
        with pytest.warns(DeprecationWarning, match='use timeout_sec'):
            assert old.timeout == 1.5
        with pytest.warns(DeprecationWarning, match='use timeout_sec'):
            old.timeout = 0.01
        with pytest.raises(SimClockTimeout, match='after 0.01 s waiting for nothing'):
            old.spin_until(lambda: False, 'nothing')
