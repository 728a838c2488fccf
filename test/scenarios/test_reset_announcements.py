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

"""Every reset on ``~/resets`` (sim_clock/msg/Reset), through DDS, and the client's on_reset."""

from bags import MS
from bags import START_NS
from bags import write_test_bag
from harness import executable
import pytest
from sim_clock.client import ResetEvent
from sim_clock.client import SimClockClient
from sim_clock.msg import Reset
from sim_clock.srv import Seek
from sim_clock.wire.names import RESET_QOS

pytestmark = pytest.mark.process


def _subscribe(client, server='/sim_clock'):
    """Return the list that a ~/resets subscription of the client's node fills, once matched."""
    events = []
    subscription = client.node.create_subscription(
        Reset, f'{server}/resets', lambda msg: events.append(ResetEvent.from_msg(msg)),
        RESET_QOS)
    client.spin_until(lambda: subscription.get_publisher_count() > 0, '~/resets to match')
    return events


def test_each_reset_is_announced_with_its_times_cause_and_state(start_server, client):
    """~/reset, a sync change and a mode change: one event each, epoch by epoch."""
    start_server({'sync': True, 'time_step': 0.001})
    events = _subscribe(client)
    client.wait_for_clock()
    assert client.step('', 5).success
    client.trigger('reset')
    client.spin_until(lambda: len(events) == 1, 'the reset event')
    assert events[0] == ResetEvent(1, 5 * MS, 0, '~/reset called', 'simulation', True)
    client.step('', 3)
    client.set_sync(False)
    client.spin_until(lambda: len(events) == 2, 'the sync change event')
    assert (events[1].epoch, events[1].time_before_ns, events[1].time_after_ns,
            events[1].mode, events[1].sync) == (2, 3 * MS, 0, 'simulation', False)
    assert 'sync' in events[1].cause
    assert client.status().epoch == 2
    # Pause and resume are not resets: no event.
    client.trigger('pause')
    client.trigger('resume')
    client.set_parameter('mode', 'real_time')
    client.spin_until(lambda: len(events) == 3, 'the mode change event')
    assert [e.epoch for e in events] == [1, 2, 3]
    assert (events[2].mode, events[2].time_after_ns) == ('real_time', 0)


def test_a_late_joiner_learns_the_last_reset(start_server, client, domain_id):
    """A subscription made after two resets gets the last one (transient local), only it."""
    start_server({'sync': True, 'time_step': 0.001})
    client.wait_for_clock()
    client.trigger('reset')
    client.step('', 2)
    client.trigger('reset')
    assert client.status().epoch == 2
    events = _subscribe(client)
    client.spin_until(lambda: events, 'the last reset')
    assert events == [ResetEvent(2, 2 * MS, 0, '~/reset called', 'simulation', True)]


def test_on_reset_calls_back_on_the_users_node(start_server, client):
    """SimClockClient.on_reset: the callback runs on the given node's executor."""
    start_server({'sync': True, 'time_step': 0.001})
    events = []
    with SimClockClient(client.node) as clock, clock.sync_mode(time_step=0.001):
        subscription = clock.on_reset(events.append)
        client.spin_until(lambda: subscription.get_publisher_count() > 0, '~/resets to match')
        clock.step(4)
        clock.reset()
        client.spin_until(lambda: events, 'the callback')
    assert events == [ResetEvent(events[0].epoch, 4 * MS, 0, '~/reset called', 'simulation',
                                 True)]


def test_a_bag_players_seek_and_loop_are_announced_in_bag_time(start_server, client,
                                                               tmp_path):
    """Seek and loop resets of a bag player carry /clock times, the bag's offset included."""
    path = str(tmp_path / 'bag')
    write_test_bag(path)
    start_server({'sync': True, 'time_step': 0.1, 'loop': True}, argv=[path],
                 executable=executable('bag_player'))
    events = _subscribe(client)
    client.wait_for_clock()
    request = Seek.Request()
    request.time.sec, request.time.nanosec = divmod(START_NS + 500 * MS, 1_000_000_000)
    assert client.call(Seek, 'seek', request).success
    client.spin_until(lambda: events, 'the seek event')
    assert (events[0].epoch, events[0].time_before_ns, events[0].time_after_ns) == (
        1, START_NS, START_NS + 500 * MS)
    assert events[0].cause.startswith('~/seek to')
    client.step('', 6)  # past the end of the 1 s bag: the loop goes back to its start
    client.spin_until(lambda: len(events) == 2, 'the loop event')
    assert (events[1].epoch, events[1].time_after_ns) == (2, START_NS)
    assert 'loop' in events[1].cause
