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

"""The hold: participants and gates as one wait, with one timeout (pure Python)."""

from hypothesis import given
from hypothesis import strategies as st
import pytest
from sim_clock.core import settings
from sim_clock.core.gates import parse_gates
from sim_clock.core.hold import Hold
from sim_clock.core.rules import Mode
from sim_clock.core.waits import Awaited

pytestmark = pytest.mark.fast

MS = 1_000_000
SECOND = 1_000 * MS


def _hold(timeout_ns=SECOND, gates='/cmd@0.02'):
    hold = Hold.with_timeout(timeout_ns)
    hold.barrier.join('planner', 0)
    hold.gates.configure(parse_gates(gates))
    return hold


def test_one_timeout_for_participants_and_gates():
    hold = _hold()
    assert hold.barrier.timeout is hold.gates.timeout is hold.timeout
    hold.timeout.ns = 2 * SECOND
    hold.published(0, 20 * MS, 0, gated=True)
    assert hold.overdue(2 * SECOND - 1) == (None, 2 * SECOND)
    late, _ = hold.overdue(2 * SECOND)
    assert late.participants == ['planner'] and late.topics == ['/cmd']


def test_a_gate_naming_its_timeout_keeps_it():
    hold = _hold(gates='/cmd@0.02:0.5')
    hold.published(0, 20 * MS, 0, gated=True)
    assert hold.overdue(0) == (None, SECOND // 2)
    late, _ = hold.overdue(SECOND // 2)
    assert late.topics == ['/cmd'] and late.participants == []


def test_settled_once_both_answered_and_holding_until_then():
    hold = _hold()
    assert hold.settled and not hold.holding and hold.barrier.participants and hold.gates.gates
    hold.published(0, 20 * MS, 100, gated=True)
    assert not hold.settled and hold.holding
    assert hold.barrier.done('planner', 20 * MS, 300)
    assert not hold.settled                 # the gated output is still awaited
    assert hold.gates.arrived('/cmd', 700)
    assert hold.settled and not hold.holding and hold.overdue(10 * SECOND) == (None, None)
    assert hold.barrier.participants['planner'].slowest_ns == 200
    assert hold.gates.gates['/cmd'].slowest_ns == 600


def test_a_frame_not_gated_waits_for_the_participant_only():
    hold = _hold()
    hold.published(0, 10 * MS, 0, gated=False)
    assert hold.barrier.waiting_for == ['planner'] and not hold.gates.awaited
    assert hold.frames_until_awaited(10 * MS, 10 * MS, 100) == 1


def test_frames_until_awaited_is_the_nearer_of_both():
    hold = Hold.with_timeout(SECOND)
    hold.gates.configure(parse_gates('/cmd@0.05'))
    assert hold.frames_until_awaited(0, 10 * MS, 100) == 5
    hold.barrier.join('planner', 30 * MS)
    assert hold.frames_until_awaited(0, 10 * MS, 100) == 1     # due at the next frame
    hold.published(0, 10 * MS, 0, gated=False)
    hold.barrier.done('planner', 10 * MS, 1)
    assert hold.frames_until_awaited(10 * MS, 10 * MS, 100) == 3    # due at 40 ms, gate at 50


def test_count_again_gives_every_holder_a_new_timeout():
    hold = _hold()
    hold.published(0, 20 * MS, 0, gated=True)
    hold.count_again(SECOND // 2)
    assert hold.overdue(SECOND) == (None, SECOND + SECOND // 2)


def test_a_reset_leaves_nothing_awaited():
    hold = _hold()
    hold.published(0, 20 * MS, 0, gated=True)
    hold.reset()
    assert hold.settled and not hold.holding and hold.overdue(10 * SECOND) == (None, None)


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 10 * SECOND)), max_size=20),
       st.integers(1, 5 * SECOND))
def test_an_awaited_record_is_late_exactly_at_its_deadline(events, timeout_ns):
    record, now = Awaited(), 0
    for awaits, delta in events:
        now += delta
        if awaits:
            record.await_frame(now, now)
        elif record.waited_for:
            before = record.slowest_ns
            assert record.answered(now) is not None
            assert record.slowest_ns >= before
        deadline = record.deadline_ns(timeout_ns)
        assert (deadline is None) == (not record.waited_for)
        if deadline is not None:
            assert not record.late(deadline - 1, timeout_ns) and record.late(deadline, timeout_ns)


def test_the_core_follows_a_reset_in_the_hold():
    """At a reset nothing stays awaited; while participants hold, the new time is a frame."""
    core = settings.initial({**settings.DEFAULTS, 'sync': True, 'time_step': 0.01,
                             'output_gates': '/cmd'}, now_ns=lambda: 0)
    core.barrier.join('planner', 0)
    core.hold.published(0, 10 * MS, 0, gated=True)
    core.timeline.step('', 3)
    core.timeline.reset('test')
    assert core.timeline.epoch_start_ns == 0
    changes = core.take_changes(now_ns=5, to_clock=lambda time_ns: time_ns + 7)
    assert [change.reset for change in changes] == [True]
    assert not core.gates.awaited
    assert core.barrier.participants['planner'].awaited_ns == 7      # the new time's /clock
    assert core.barrier.participants['planner'].awaited_since_ns == 5
    # In real time participants hold nothing: the reset leaves nothing awaited.
    core.timeline.set_mode_sync(Mode.REAL_TIME, False)
    core.take_changes(now_ns=6, to_clock=lambda time_ns: time_ns)
    assert core.hold.settled and not core.hold.holding
    assert core.timeline.epoch_start_ns == core.timeline.time_ns
    assert core.rate_cap.last_out_ns is None


def test_a_reset_makes_the_rate_cap_forget_the_last_time_out():
    core = settings.initial({**settings.DEFAULTS, 'sync': True}, now_ns=lambda: 0)
    core.rate_cap.last_out_ns = 123
    core.take_changes(now_ns=0, to_clock=lambda time_ns: time_ns)
    assert core.rate_cap.last_out_ns == 123         # no reset: kept
    core.timeline.reset('test')
    core.take_changes(now_ns=0, to_clock=lambda time_ns: time_ns)
    assert core.rate_cap.last_out_ns is None


class Position:
    """A bag's cursor, as the core sees it: where each reset moved it."""

    def __init__(self):
        self.moves = []

    def move_to(self, time_ns, epoch):
        self.moves.append((time_ns, epoch))


def test_every_reset_moves_the_recorded_datas_position_and_nothing_else_does():
    """A seek, a reset and a mode change move it to the new time, in order; steps do not."""
    core = settings.initial({**settings.DEFAULTS, 'sync': True, 'time_step': 0.01},
                            now_ns=lambda: 0)
    core.position = position = Position()
    core.timeline.step('', 3)
    core.timeline.seek(25 * MS, 'test')
    core.timeline.step('', 1)
    core.timeline.reset('test')
    core.take_changes(now_ns=0, to_clock=lambda time_ns: time_ns)
    assert position.moves == [(25 * MS, 1), (0, 2)]
    core.timeline.step('', 2)
    core.timeline.set_mode_sync(Mode.SIMULATION, False)
    core.take_changes(now_ns=0, to_clock=lambda time_ns: time_ns)
    assert position.moves == [(25 * MS, 1), (0, 2), (0, 3)]
