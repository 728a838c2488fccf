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
Acknowledgements (``sim_clock.node.acks``), without DDS: the one wait loop, and what it says.

The one wait loop for acknowledgements (``Acknowledgements._slices``): a step's wait
(``StepRunner._acknowledged``, through ``acks.Wait``) takes a turn of the executor between two
slices; ``Acknowledgements.wait_now`` (flow control, a bag frame's data) goes straight on. Both
run this loop: the same deadline, the same memory of stalled readers, the same record. What
held a step back for its readers is recorded by the waits and said in the step's answer.
"""

import time

from flow_doubles import Writer
import pytest
from sim_clock.node.acks import Acknowledgements
from sim_clock.node.acks import describe_waits
from sim_clock.node.acks import SLICE_NS

pytestmark = pytest.mark.fast

MS = 1_000_000


class SlowWriter(Writer):
    """A writer whose readers acknowledge everything once ``acked_after`` waits have passed."""

    def __init__(self, topic, acked_after):
        super().__init__()
        self.topic_name, self.waits = topic, acked_after

    def wait_for_all_acked(self, timeout):
        if self.waits <= 0:
            return True
        self.waits -= 1
        time.sleep(timeout.nanoseconds / 1e9)  # what rclpy's wait does while readers lag
        return False


def test_waits_are_counted_per_topic_and_taken_once():
    acks = Acknowledgements()
    slow, quick = SlowWriter('/slow', acked_after=3), SlowWriter('/quick', acked_after=0)
    assert acks.wait_now([slow, quick], timeout_ns=1_000 * MS) == []
    waited, stalled = acks.take_waits()
    assert set(waited) == {'/slow', '/quick'}
    assert waited['/slow'] >= 3 * 2 * MS  # three slices of 2 ms before it acknowledged
    assert waited['/quick'] < waited['/slow']
    assert stalled == []
    assert acks.take_waits() == ({}, [])


def test_readers_that_never_acknowledge_are_named_as_stalled():
    acks = Acknowledgements()
    dead = SlowWriter('/dead', acked_after=10**9)
    assert acks.wait_now([dead], timeout_ns=10 * MS) == ['/dead']
    waited, stalled = acks.take_waits()
    assert stalled == ['/dead'] and waited['/dead'] >= 10 * MS


def test_the_answer_names_long_waits_slowest_first_and_stalled_readers():
    assert describe_waits({}, []) == ''
    assert describe_waits({'/a': 50 * MS}, []) == ''  # too short to mention
    text = describe_waits({'/b': 1_000 * MS, '/a': 2_000 * MS, '/c': 1 * MS}, ['/d'])
    assert text == ('; paced by its readers: waited 3.001 s for the acknowledgements of '
                    '/a (2.000 s), /b (1.000 s); readers of /d stalled (no acknowledgement in '
                    'time): they may have lost samples')


class Readers(Writer):
    """
    A writer whose readers acknowledge once ``lagging`` slices have passed (-1: never).

    ``slices`` counts the waits of a slice, not the look without waiting at a stalled topic.
    """

    def __init__(self, topic, lagging):
        super().__init__()
        self.topic_name, self.lagging, self.slices = topic, lagging, 0

    def wait_for_all_acked(self, timeout):
        assert timeout.nanoseconds <= SLICE_NS
        if self.lagging == 0 or timeout.nanoseconds == 0:
            return self.lagging == 0
        self.slices += 1
        self.lagging -= 1
        return False


def _recording():
    waits = []
    return Acknowledgements(on_wait=lambda *wait: waits.append(wait)), waits


def test_the_caller_has_a_turn_between_two_slices_and_none_after_the_last():
    acks, waits = _recording()
    slow = Readers('/slow', lagging=3)
    wait = acks.wait([slow], timeout_ns=1_000 * MS)
    turns = [slow.slices for _ in wait]  # what a step does there: a turn of the executor
    assert turns == [1, 2, 3]  # then the fourth slice has them acknowledged
    assert wait.stalled == []
    [(topics, start, end, stalled)] = waits
    assert (topics, stalled) == (['/slow'], []) and start <= end


def test_what_a_turn_does_is_seen_by_the_next_slice():
    """Acknowledged during a turn of the executor: the wait ends at the next slice."""
    acks, _ = _recording()
    reader = Readers('/clock', lagging=-1)
    wait = acks.wait([reader], timeout_ns=1_000 * MS)
    for turn, _ in enumerate(wait):
        if turn == 1:
            reader.lagging = 0
    assert (turn, reader.slices, wait.stalled) == (1, 2, [])


def test_wait_now_runs_the_same_loop_without_turns():
    """Same answer and record; the time waited counts per topic for the step's answer."""
    for drive in ('turns', 'now'):
        acks, waits = _recording()
        slow, quick = Readers('/slow', lagging=2), Readers('/quick', lagging=0)
        if drive == 'now':
            assert acks.wait_now([slow, quick], 1_000 * MS) == []
        else:
            wait = acks.wait([slow, quick], 1_000 * MS)
            assert len(list(wait)) == 2 and wait.stalled == []
        waited, stalled = acks.take_waits()
        assert set(waited) == {'/slow', '/quick'} and stalled == []
        assert [wait[0] for wait in waits] == [['/slow', '/quick']]


def test_readers_past_the_deadline_stall_and_are_skipped_while_the_same():
    acks, waits = _recording()
    dead = Readers('/dead', lagging=-1)
    wait = acks.wait([dead], timeout_ns=10 * MS)
    turns = sum(1 for _ in wait)
    assert wait.stalled == ['/dead'] and turns >= 1
    assert waits[-1][0] == ['/dead'] and waits[-1][3] == ['/dead']
    assert waits[-1][2] - waits[-1][1] >= 10 * MS  # the whole timeout
    # Its readers are the same and still lag: the next wait, stepped or not, skips it.
    slices = dead.slices
    wait = acks.wait([dead], timeout_ns=10 * MS)
    assert list(wait) == [] and wait.stalled == ['/dead']
    assert acks.wait_now([dead], 10 * MS) == ['/dead']
    assert dead.slices == slices
    assert acks.take_waits()[1] == ['/dead']


def test_flow_control_waits_for_a_stalled_topic_and_keeps_the_memory_true():
    """
    ``skip_stalled=False`` (flow control's windows): a stalled topic is waited for all the same.

    Stalled again, it is still remembered, so a step's wait skips it; caught up within that
    wait, it is forgotten, so a step's wait waits for it again.
    """
    acks, waits = _recording()
    dead = Readers('/dead', lagging=-1)
    assert acks.wait_now([dead], 10 * MS) == ['/dead']
    slices = dead.slices
    assert acks.wait_now([dead], 10 * MS, skip_stalled=False) == ['/dead']
    assert dead.slices > slices and waits[-1][2] - waits[-1][1] >= 10 * MS  # the whole timeout
    slices = dead.slices
    wait = acks.wait([dead], timeout_ns=10 * MS)
    assert list(wait) == [] and wait.stalled == ['/dead'] and dead.slices == slices
    dead.lagging = 2  # it takes again: two slices more and it has everything
    wait = acks.wait([dead], timeout_ns=1_000 * MS, skip_stalled=False)
    assert len(list(wait)) == 2 and wait.stalled == []
    dead.lagging = 1  # the next samples: a step's wait waits for them again
    wait = acks.wait([dead], timeout_ns=1_000 * MS)
    assert len(list(wait)) == 1 and wait.stalled == []


def test_a_node_that_stops_ends_the_wait_at_the_next_slice_with_nothing_left():
    acks, waits = _recording()
    dead = Readers('/dead', lagging=-1)
    wait = acks.wait([dead], timeout_ns=1_000 * MS)
    for _ in wait:
        acks.stop()  # Ctrl-C during a turn of the executor
    assert (dead.slices, wait.stalled, waits) == (1, [], [])
    assert acks.wait_now([dead], 1_000 * MS) == [] and dead.slices == 1
