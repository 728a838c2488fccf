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
DDS in ``test/scenarios/test_clock_views.py``, and rcl's refusal in C in
``test/bag/test_replay.py``; here the refusals are placed exactly, on /clock and the views
(``FlowControl.publish``). A bag's run: ``test/bag/test_flow_controlled_run.py``.

The one policy for a refused sample is ``FlowControl.retry``: /clock and the views and the bag
player's run (``sim_clock.bag.flow_controlled_run.paced``) ask it the same question: publish
the refused sample again, or give up on that writer for the rest of the run of frames.
"""

from fractions import Fraction
import time
from types import SimpleNamespace

from flow_doubles import KeepLast
from flow_doubles import make_flow as _flow
from flow_doubles import make_owner
from flow_doubles import SHORT_WAIT_NS
from flow_doubles import short_waits
from flow_doubles import Writer
import pytest
from rclpy.executors import ExternalShutdownException
from sim_clock.node import flow_control as flow_module
from sim_clock.node.acks import Acknowledgements
from sim_clock.node.flow_control import MAX_WINDOW
from sim_clock.node.flow_control import PublisherDestroyed
from sim_clock.node.flow_control import WAIT_TIMEOUT_NS

pytestmark = pytest.mark.fast


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


def _waits():
    """Return Acknowledgements that record each wait, and the record: [(stalled, ns)]."""
    waits = []
    return Acknowledgements(on_wait=lambda topics, start, end, stalled: waits.append(
        (stalled, end - start))), waits


def test_a_live_reader_beside_a_dead_one_loses_nothing(monkeypatch):
    """
    A dead reader stays matched until its lease ends: every window still waits for its topic.

    The live reader beside it takes samples only while the server waits, far slower than the
    server publishes: it gets every sample of a step four times the writer's history, one
    window per wait. The dead one loses what fell out of the history.
    """
    short_waits(monkeypatch)
    acks, waits = _waits()
    clock = KeepLast(depth=1000, readers={'live': 50, 'dead': 0})
    flow, logger = _flow(clock, acks=acks)
    flow.publish(0, clock.publish, range(4000))
    flow.refill()  # what the next step waits for first
    assert clock.sent == clock.taken['live'] == list(range(4000))
    assert clock.lost == {'live': [], 'dead': list(range(3000))}
    # The first wait had nothing out; each one after a window waited its whole timeout.
    assert [stalled for stalled, _ in waits] == [[]] + [['/clock']] * 8
    assert all(ns >= SHORT_WAIT_NS for _, ns in waits[1:])
    assert len(logger.warnings) == 8  # the node's logger throttles them
    assert 'each window of stepped frames on those topics waits' in logger.warnings[0]


@pytest.mark.parametrize('recovery', ['leaves', 'resumes'])
def test_windows_go_out_unwaited_again_once_the_stalled_reader_leaves_or_resumes(
        monkeypatch, recovery):
    """A dead reader's lease ends (it unmatches), or a frozen one takes again: full speed."""
    short_waits(monkeypatch)
    acks, waits = _waits()
    clock = KeepLast(depth=1000, readers={'live': 500, 'stalled': 0})
    flow, _ = _flow(clock, acks=acks)
    flow.publish(0, clock.publish, range(1500))
    if recovery == 'leaves':
        clock.leave('stalled')
    else:
        clock.rates['stalled'] = 500
    flow.publish(0, clock.publish, range(1500, 3000))
    assert [stalled for stalled, _ in waits] == [[], ['/clock'], ['/clock'], [], [], []]
    assert all(ns < SHORT_WAIT_NS for stalled, ns in waits if not stalled)
    assert clock.sent == list(range(3000)) and clock.lost['live'] == []
    if recovery == 'resumes':  # it lost what fell out of the history while it was frozen
        assert clock.lost['stalled'] == list(range(500))
        assert clock.taken['stalled'] == list(range(500, 2500))


def test_a_node_that_stops_ends_the_wait_for_a_stalled_topic_within_a_slice(monkeypatch):
    """Ctrl-C while a dead reader paces the windows: no wait of WAIT_TIMEOUT_NS, no window more."""
    short_waits(monkeypatch)
    acks, waits = _waits()
    clock = KeepLast(depth=1000, readers={'dead': 0})
    flow, _ = _flow(clock, acks=acks)
    flow.publish(0, clock.publish, range(1000))
    assert waits[-1][0] == ['/clock']  # stalled: the next window waits for it again
    monkeypatch.setattr(flow_module, 'WAIT_TIMEOUT_NS', 60_000_000_000)  # longer than the test
    acked = clock.wait_for_all_acked

    def stopped_in_a_slice(timeout):
        if timeout.nanoseconds:
            acks.stop()
        return acked(timeout)
    clock.wait_for_all_acked = stopped_in_a_slice
    started = time.monotonic()
    flow.publish(0, clock.publish, range(1000, 3000))
    assert time.monotonic() - started < 1.0
    assert clock.sent == list(range(1500))  # the window it waited for, no more


def test_a_sample_refused_again_right_after_the_wait_is_dropped_with_the_rest():
    writer = Writer(refuse={10, 11})  # the first try, and the try after the wait
    flow, logger = _flow(writer)
    flow.publish(0, writer.publish, range(100))
    assert writer.sent == list(range(10))
    assert '90 frames not published' in logger.warnings[0]


def test_a_destroyed_publisher_or_a_shut_down_context_still_raises():
    """A shut-down context ends the publish as rclpy.spin's callers expect it to end."""
    def destroyed(time_ns):
        raise PublisherDestroyed('gone')
    flow, _ = _flow(Writer())
    with pytest.raises(PublisherDestroyed):
        flow.publish(0, destroyed, range(3))
    writer = Writer(refuse={1})
    flow, _ = _flow(writer, ok=False)
    with pytest.raises(ExternalShutdownException, match='context was shut down') as raised:
        flow.publish(0, writer.publish, range(3))
    assert 'cannot publish data' in str(raised.value.__cause__)


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


def _views(*topics):
    views = [Writer() for _ in topics]
    for view, topic in zip(views, topics):
        view.topic_name = topic
    return views


def _publish_windows(clock_flow, clock, views_flow, views, frames):
    """Publish ``frames`` as the views' sink does: a window of /clock, then of each view."""
    for start in range(0, len(frames), MAX_WINDOW):
        window = frames[start:start + MAX_WINDOW]
        clock_flow.publish(0, clock.publish, window)
        for index, view in enumerate(views):
            views_flow.publish(index, view.publish, window)


def test_clock_and_the_views_wait_for_their_readers_once_per_window_together():
    """
    The node's one FlowControl: /clock's spent window waits for the views' too.

    The views then publish their window without a wait of their own: one wait per window of
    stepped frames (two before, one per group), every frame on every writer.
    """
    waits = []
    owner, logger = make_owner(acks=Acknowledgements(
        on_wait=lambda topics, *rest: waits.append(sorted(topics))))
    clock, views = Writer(), _views('/a/clock', '/b/clock')
    clock_flow, views_flow = owner.writers([clock]), owner.writers(views)
    frames = range(4 * MAX_WINDOW)
    _publish_windows(clock_flow, clock, views_flow, views, frames)
    assert [writer.sent for writer in (clock, *views)] == [list(frames)] * 3
    assert waits == [['/a/clock', '/b/clock', '/clock']] * 4
    assert logger.warnings == []


def test_steps_after_free_run_arm_every_group_and_wait_once_for_what_it_left():
    """Free run waits for none; the first stepped window waits once, for all writers."""
    waits = []
    timeline = SimpleNamespace(free_running=True, frame_period_ns=lambda: Fraction(0))
    owner, _ = make_owner(timeline=timeline, acks=Acknowledgements(
        on_wait=lambda topics, *rest: waits.append(sorted(topics))))
    clock, views = Writer(), _views('/a/clock')
    clock_flow, views_flow = owner.writers([clock]), owner.writers(views)
    _publish_windows(clock_flow, clock, views_flow, views, range(3 * MAX_WINDOW))
    assert waits == []
    timeline.free_running = False
    owner.after_changes([])  # the server's changes dispatched: sync on, for one
    _publish_windows(clock_flow, clock, views_flow, views, range(10))
    assert waits == [['/a/clock', '/clock']]
    assert list(clock_flow.budgets) == list(views_flow.budgets) == [MAX_WINDOW - 10]


def test_a_writer_has_one_budget_per_node():
    owner, _ = make_owner()
    clock = Writer()
    owner.writers([clock])
    with pytest.raises(ValueError, match='/clock already has a flow-control budget'):
        owner.writers([Writer(), clock])


def test_writers_held_at_full_speed_wait_for_their_readers_in_free_run_as_fast_as_possible():
    """A bag's topics keep their windows at factor 0; /clock does not; paced free run: none."""
    waits = []
    timeline = SimpleNamespace(free_running=True, frame_period_ns=lambda: Fraction(0))
    owner, _ = make_owner(timeline=timeline, acks=Acknowledgements(
        on_wait=lambda topics, *rest: waits.append(sorted(topics))))
    topic, clock = Writer(), Writer()
    topic.topic_name = '/a'
    group = owner.writers([topic, clock])
    group.hold_at_full_speed([0])
    assert group.budgets[0] == 0 and group.budgets[1] < 0
    for _ in range(3 * MAX_WINDOW):
        group.publish(0, topic.publish, [0])
        group.publish(1, clock.publish, [0])
    assert waits == [['/a']] * 3
    timeline.frame_period_ns = lambda: Fraction(10_000_000)  # paced: not held
    owner.after_changes([])
    assert all(budget < 0 for budget in group.budgets)
    timeline.free_running = False  # stepped: every writer held
    owner.after_changes([])
    assert list(group.budgets) == [0, 0]


class CountedWriter(Writer):
    """A writer that counts the waits for its readers' acknowledgements."""

    def __init__(self, acked=True):
        super().__init__(acked=acked)
        self.waits = 0

    def wait_for_all_acked(self, timeout):
        self.waits += 1
        return self.acked


def test_a_sample_refused_first_is_published_again_once_its_readers_caught_up():
    writer = CountedWriter()
    flow, _ = _flow(writer)
    assert flow.retry(RuntimeError('cannot publish data'), 0, 7, None)
    assert writer.waits == 1
    assert flow.retry(RuntimeError('cannot publish data'), 0, 9, 7)  # another sample


def test_the_sample_refused_last_is_given_up_at_once_without_a_wait():
    writer = CountedWriter()
    flow, _ = _flow(writer)
    assert not flow.retry(RuntimeError('cannot publish data'), 0, 7, 7)
    assert not flow.retry(RuntimeError('cannot publish data'), 0, (0, 2, 3), (0, 2, 3))
    assert writer.waits == 0


def test_readers_that_do_not_catch_up_in_time_make_the_writer_give_up(monkeypatch):
    short_waits(monkeypatch)
    flow, _ = _flow(CountedWriter(acked=False))
    assert not flow.retry(RuntimeError('cannot publish data'), 0, 7, None)


def test_a_refusal_in_a_shut_down_context_ends_as_a_shutdown():
    """rclpy.spin's callers end on ExternalShutdownException; the refusal is its cause."""
    flow, _ = _flow(CountedWriter(), ok=False)
    error = RuntimeError('cannot publish data')
    with pytest.raises(ExternalShutdownException) as raised:
        flow.retry(error, 0, 7, None)
    assert raised.value.__cause__ is error


def test_giving_up_says_which_topic_refused_what_and_what_it_costs():
    flow, logger = _flow(Writer(), Writer())
    flow.gave_up(-1, RuntimeError('cannot publish data'), '3 frames not published on it')
    assert logger.warnings == [
        '/clock refused a sample (cannot publish data) and its readers did not catch up '
        'within 5 s: 3 frames not published on it']


def test_a_new_sample_refused_first_in_a_window_after_a_retry_is_published_again():
    """
    Refused at 700, published again; refused again at 1000, the first of the next window.

    1000 is another sample, with 300 published since the last refusal: its readers get their
    wait, as a bag's message would, and nothing is lost.
    """
    writer = Writer(refuse={700, 1001})  # attempts: 1001 is time 1000 (700 was tried twice)
    flow, logger = _flow(writer)
    flow.publish(0, writer.publish, range(2000))
    assert writer.sent == list(range(2000))
    assert logger.warnings == []
