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
A publish the writer refuses, without DDS: published again, or the rest dropped, never fatal.

The writer's refusal itself (Fast DDS 3 with a slow reader that keeps all) is produced through
DDS in ``test/system/test_clock_views.py``, and rcl's refusal in C in
``test/system/test_replay_native.py``; here the refusals are placed exactly, on /clock and the
views (``FlowControl.publish``). A bag's run: ``test/bag/test_bag_flow.py``.
"""

from flow_doubles import make_flow as _flow
from flow_doubles import short_waits
from flow_doubles import Writer
import pytest
from sim_clock.node.acks import Acknowledgements
from sim_clock.node.flow import MAX_WINDOW
from sim_clock.node.flow import PublisherDestroyed
from sim_clock.node.flow import WAIT_TIMEOUT_NS


@pytest.mark.parametrize('free_running', [False, True], ids=['stepped', 'free-run'])
def test_a_refused_sample_is_published_again_once_the_readers_caught_up(free_running):
    writer = Writer(refuse={700})
    flow, logger = _flow(writer, free_running=free_running)
    flow.publish(0, writer.publish, range(2000))
    assert writer.sent == list(range(2000))  # nothing lost, nothing twice, in order
    assert logger.warnings == []
    # Stepped: four windows of 500, the refused one counted by what it really sent.
    assert flow.budgets[0] == (-1 if free_running else 0)
    assert 2000 % MAX_WINDOW == 0


def test_readers_that_do_not_catch_up_cost_the_rest_of_the_run_on_that_topic(monkeypatch):
    short_waits(monkeypatch)
    writer = Writer(refuse={300}, acked=False)
    flow, logger = _flow(writer)
    flow.publish(0, writer.publish, range(2000))
    assert writer.sent == list(range(300))
    assert 'stalled reliable readers of: /clock' in logger.warnings[0]  # the first window
    assert '/clock refused a sample (cannot publish data)' in logger.warnings[1]
    assert '1700 frames not published on it' in logger.warnings[1]


def test_a_sample_refused_again_right_after_the_wait_is_dropped_with_the_rest():
    writer = Writer(refuse={10, 11})  # the first try, and the try after the wait
    flow, logger = _flow(writer)
    flow.publish(0, writer.publish, range(100))
    assert writer.sent == list(range(10))
    assert '90 frames not published' in logger.warnings[0]


def test_a_destroyed_publisher_or_a_shut_down_context_still_raises():
    def destroyed(time_ns):
        raise PublisherDestroyed('gone')
    flow, _ = _flow(Writer())
    with pytest.raises(PublisherDestroyed):
        flow.publish(0, destroyed, range(3))
    writer = Writer(refuse={1})
    flow, _ = _flow(writer, ok=False)
    with pytest.raises(RuntimeError, match='cannot publish data'):
        flow.publish(0, writer.publish, range(3))


def test_a_node_that_stops_ends_the_wait_under_way_and_publishes_no_further_window():
    """
    Ctrl-C while a step waits for a reader that acknowledges nothing (``Acknowledgements.stop``).

    The signal comes during the wait: it ends within a slice instead of WAIT_TIMEOUT_NS (5 s),
    names no reader as stalled, and the step publishes the window it waited for, no more.
    """
    acks = Acknowledgements()
    writer = Writer(acked=False)
    writer.wait_for_all_acked = lambda timeout: acks.stop() or False
    flow, logger = _flow(writer, acks=acks)
    flow.publish(0, writer.publish, range(4 * MAX_WINDOW))
    assert writer.sent == list(range(MAX_WINDOW))
    assert logger.warnings == []


def test_a_node_that_stops_does_not_wait_for_readers_to_catch_up():
    """After a refused sample: the wait for its readers ends within a slice once stopped."""
    acks = Acknowledgements()
    writer = Writer(acked=False)
    writer.wait_for_all_acked = lambda timeout: acks.stop() or False
    assert acks.caught_up(writer, WAIT_TIMEOUT_NS)
    assert acks.stopped
