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

"""Output gates without ROS: the parameter's entries, which frames are gated, the waits."""

from hypothesis import given
from hypothesis import strategies as st
import pytest
from sim_clock.core import settings
from sim_clock.core.gates import check_periods
from sim_clock.core.gates import frames_until_gated
from sim_clock.core.gates import gated
from sim_clock.core.gates import Gates
from sim_clock.core.gates import GateSpec
from sim_clock.core.gates import MAX_GATES
from sim_clock.core.gates import parse_entry
from sim_clock.core.gates import parse_gates
from sim_clock.core.rules import Mode
from sim_clock.core.rules import Refused
from sim_clock.core.waits import Timeout

pytestmark = pytest.mark.fast

MS = 1_000_000
SEC = 1_000_000_000


@pytest.mark.parametrize('entry, spec', [
    ('/cmd', GateSpec('/cmd')),
    ('/cmd@0.05', GateSpec('/cmd', 50 * MS)),
    ('/cmd@0.05:2', GateSpec('/cmd', 50 * MS, 2 * SEC)),
    ('/cmd:0.5', GateSpec('/cmd', 0, 500 * MS)),
    ('/robot_1/cmd_vel@1', GateSpec('/robot_1/cmd_vel', SEC)),
    (' /cmd @ 0.010 : 1.5 ', GateSpec('/cmd', 10 * MS, 1500 * MS)),
    ('/cmd@0', GateSpec('/cmd')),
    ('/cmd@0.000000001', GateSpec('/cmd', 1)),
])
def test_entries_read_as_written(entry, spec):
    """Each form of an entry gives its topic, period and timeout, exact to the ns."""
    assert parse_entry(entry) == spec


@pytest.mark.parametrize('spec, text', [
    (GateSpec('/cmd'), '/cmd'),
    (GateSpec('/cmd', 50 * MS), '/cmd@0.05'),
    (GateSpec('/cmd', 50 * MS, 2 * SEC), '/cmd@0.05:2'),
    (GateSpec('/a', 0, 1), '/a:0.000000001'),
])
def test_a_gate_prints_as_its_entry(spec, text):
    """The text of a gate (status, diagnostics) is an entry that reads back as that gate."""
    assert spec.text == text
    assert parse_entry(text) == spec


@pytest.mark.parametrize('entry, says', [
    ('cmd', 'not an absolute topic name'),
    ('', 'not an absolute topic name'),
    ('/', 'not an absolute topic name'),
    ('/cmd/', 'not an absolute topic name'),
    ('//cmd', 'not an absolute topic name'),
    ('/1cmd', 'not an absolute topic name'),
    ('/cmd-vel', 'not an absolute topic name'),
    ('@0.05', 'not an absolute topic name'),
    ('/cmd@x', 'the period must be a number of seconds'),
    ('/cmd@', 'the period must be a number of seconds'),
    ('/cmd@-0.05', 'the period must not be negative'),
    ('/cmd@nan', 'the period must be a finite number'),
    ('/cmd@inf', 'the period must be a finite number'),
    ('/cmd@0.0000000001', 'whole number of nanoseconds'),
    ('/cmd@3000000000', 'at most'),
    ('/cmd:-1', 'the timeout must not be negative'),
    ('/cmd:0', 'the timeout must be > 0'),
    ('/cmd@0.05:x', 'the timeout must be a number of seconds'),
    ('/cmd@0.05:1:2', 'the timeout must be a number of seconds'),
])
def test_bad_entries_are_refused_saying_what_is_allowed(entry, says):
    """A bad topic, period or timeout is refused; the reason names the entry and the rule."""
    with pytest.raises(Refused) as refused:
        parse_entry(entry)
    assert says in refused.value.reason
    assert repr(entry) in refused.value.reason


def held(gates: Gates, before_ns: int, time_ns: int, now_ns: int, start: bool = True) -> list:
    """
    Return the gates that hold the frame at ``time_ns``; hold it for them if ``start``.

    As the engine asks and holds (``Frames.unready``).
    """
    topics = gates.unready(before_ns, time_ns, now_ns)
    gates.hold(topics if start else (), time_ns, now_ns)
    return topics


def test_the_value_takes_a_list_a_text_or_nothing():
    """A list, one text of entries, and an empty value of any type (no gates)."""
    both = (GateSpec('/cmd', 50 * MS), GateSpec('/odom'))
    assert parse_gates(['/cmd@0.05', '/odom']) == both
    assert parse_gates('/cmd@0.05 /odom') == both
    assert parse_gates('/cmd@0.05, /odom') == both
    assert parse_gates("['/cmd@0.05', \"/odom\"]") == both
    assert parse_gates('') == parse_gates([]) == parse_gates('  ') == parse_gates(None) == ()


@pytest.mark.parametrize('value, says', [
    (['/cmd', '/cmd@0.05'], 'names /cmd more than once'),
    ([1], 'entries must be text'),
    (3, 'must be a list of text entries'),
    ([f'/t{i}' for i in range(MAX_GATES + 1)], f'at most {MAX_GATES} entries'),
])
def test_bad_values_are_refused(value, says):
    """Duplicates, non-text entries and too many gates are refused."""
    with pytest.raises(Refused, match=says):
        parse_gates(value)


def test_periods_must_be_whole_frames():
    """A period that is not a multiple of time_step is refused, naming both."""
    check_periods(parse_gates('/a@0.05 /b'), 10 * MS)
    with pytest.raises(Refused, match=r'period 50000000 ns is not a multiple of time_step '
                                      r'\(30000000 ns\)'):
        check_periods(parse_gates('/a@0.05'), 30 * MS)


def test_settings_check_gates_against_time_step_both_ways():
    """output_gates is checked against time_step, and a new time_step against the gates."""
    core = settings.initial(dict(settings.DEFAULTS, output_gates=['/cmd@0.05']))
    assert core.gates.specs == (GateSpec('/cmd', 50 * MS),)
    with pytest.raises(Refused, match='not a multiple of time_step'):
        settings.parse({'output_gates': '/cmd@0.015'}, Mode.SIMULATION, core)
    with pytest.raises(Refused, match='not a multiple of time_step'):
        settings.parse({'time_step': 0.03}, Mode.SIMULATION, core)
    # Both at once: checked together.
    parsed = settings.parse({'time_step': 0.03, 'output_gates': '/cmd@0.06'},
                            Mode.SIMULATION, core)
    settings.apply(parsed, core)
    assert core.gates.specs == (GateSpec('/cmd', 60 * MS),)
    with pytest.raises(Refused):
        settings.initial(dict(settings.DEFAULTS, output_gates='/cmd@0.015'))


def test_participant_timeout_is_the_default_gate_timeout():
    """A gate without a timeout waits participant_timeout; one with its own keeps it."""
    core = settings.initial(dict(settings.DEFAULTS, output_gates='/a /b:0.5',
                                 participant_timeout=3.0))
    gates = core.gates
    assert [gates.timeout_ns(gate) for gate in gates.gates.values()] == [3 * SEC, SEC // 2]
    settings.apply(settings.parse({'participant_timeout': 4.0}, Mode.SIMULATION, core), core)
    assert gates.timeout_ns(gates.gates['/a']) == 4 * SEC


def test_gated_frames_on_the_grid_are_the_multiples():
    """Frames of 10 ms with a period of 50 ms: frames at 50, 100, 150 ms are gated."""
    times = range(0, 301 * MS, 10 * MS)
    assert [t for before, t in zip(times, times[1:]) if gated(50 * MS, before, t)] == [
        50 * MS, 100 * MS, 150 * MS, 200 * MS, 250 * MS, 300 * MS]
    assert all(gated(0, before, t) for before, t in zip(times, times[1:]))


def test_off_the_grid_the_first_frame_past_each_multiple_is_gated():
    """Frames from 3 ms in steps of 10 ms: the frames at 53, 103 ms... (a timer fires then)."""
    times = range(3 * MS, 204 * MS, 10 * MS)
    assert [t for before, t in zip(times, times[1:]) if gated(50 * MS, before, t)] == [
        53 * MS, 103 * MS, 153 * MS, 203 * MS]


@given(period=st.integers(1, 50), step=st.integers(1, 20), start=st.integers(0, 500),
       limit=st.integers(1, 200))
def test_frames_until_gated_ends_on_the_first_gated_frame(period, step, start, limit):
    """The run it gives ends on the first gated frame (or at limit), and none before is."""
    count = frames_until_gated(period, start, step, limit)
    assert 1 <= count <= limit
    times = [start + k * step for k in range(count + 1)]
    gated_ones = [gated(period, before, t) for before, t in zip(times, times[1:])]
    assert not any(gated_ones[:-1])
    assert gated_ones[-1] or count == limit


def test_a_gated_frame_waits_for_a_message_on_each_of_its_topics():
    """Only the gated topics are awaited; one message each releases them."""
    gates = Gates(timeout=Timeout(SEC))
    gates.configure(parse_gates('/cmd@0.05 /odom@0.1'))
    assert gates.frames_until_gated(0, 10 * MS, 100) == 5
    assert not gates.gated_in(0, 40 * MS) and gates.gated_in(0, 50 * MS)
    assert gates.published(40 * MS, 50 * MS, now_ns=7) == ['/cmd']
    assert gates.awaited and gates.waiting_for == ['/cmd']
    assert not gates.arrived('/odom', now_ns=8)   # not awaited
    assert not gates.arrived('/other', now_ns=8)  # not gated
    assert gates.arrived('/cmd', now_ns=12)
    assert not gates.awaited and not gates.arrived('/cmd', now_ns=13)
    gate = gates.gates['/cmd']
    assert (gate.last_satisfied_ns, gate.slowest_ns) == (50 * MS, 5)
    assert sorted(gates.published(90 * MS, 100 * MS, 20)) == ['/cmd', '/odom']
    assert gates.arrived('/odom', 21) and gates.waiting_for == ['/cmd']


def test_late_gates_timeout_deadline_and_count_again():
    """A gate is late past its timeout; a new step counts afresh; release ends the wait."""
    gates = Gates(timeout=Timeout(100))
    gates.configure(parse_gates(['/a', '/b:0.000000050']))
    assert gates.deadline_ns() is None and gates.late(10 ** 9) == []
    gates.published(0, 10, now_ns=1000)
    assert gates.deadline_ns() == 1050
    assert gates.late(1049) == [] and gates.late(1050) == ['/b']
    assert gates.late(1100) == ['/a', '/b']
    gates.count_again(2000)
    assert gates.late(2049) == [] and gates.deadline_ns() == 2050
    gates.release(['/b'])
    assert gates.waiting_for == ['/a'] and gates.deadline_ns() == 2100


def test_reconfiguring_keeps_unchanged_topics_and_drops_removed_waits():
    """A new table keeps a topic's statistics; a removed topic's wait ends at once."""
    gates = Gates()
    gates.configure(parse_gates('/a /b'))
    gates.published(0, 10, 0)
    assert gates.arrived('/a', 7)
    gates.configure(parse_gates('/a@0.02'))
    assert not gates.awaited and list(gates.gates) == ['/a']
    assert gates.gates['/a'].slowest_ns == 7 and gates.gates['/a'].spec.period_ns == 20 * MS
    gates.published(10, 20 * MS, 0)
    gates.reset()
    assert not gates.awaited


def _held_gate(timeout='1', margin=100):
    """Return a gate on /cmd every 50 ms with the given timeout (s) and match margin (ns)."""
    gates = Gates(match_margin_ns=margin)
    gates.configure(parse_gates(f'/cmd@0.05:{timeout}'))
    return gates


def test_a_gated_frame_is_held_until_its_gate_has_a_writer():
    """No writer: held, up to the timeout; a writer matched: held for the margin, then it goes."""
    gates = _held_gate()
    assert held(gates, 30 * MS, 40 * MS, now_ns=0) == []   # not a gated frame
    assert not gates.holding
    assert held(gates, 40 * MS, 50 * MS, now_ns=0) == ['/cmd']
    assert gates.holding and not gates.awaited and gates.waiting_for == ['/cmd']
    assert gates.deadline_ns() == SEC
    assert gates.no_writer(SEC - 1) == [] and gates.no_writer(SEC) == ['/cmd']
    assert gates.matched('/cmd', 1, now_ns=10)             # a held frame may go: look again
    assert gates.no_writer(2 * SEC) == []                  # it has a writer now
    assert gates.deadline_ns() == 110
    assert held(gates, 40 * MS, 50 * MS, now_ns=109) == ['/cmd']
    assert held(gates, 40 * MS, 50 * MS, now_ns=110) == []
    assert not gates.holding and gates.deadline_ns() is None
    assert gates.published(40 * MS, 50 * MS, now_ns=120) == ['/cmd'] and gates.awaited


def test_asking_which_gates_hold_a_frame_changes_nothing():
    """Asked any number of times (``unready``), no frame is held or let go by the question."""
    gates = _held_gate()
    for now in (0, SEC, 2 * SEC):
        assert gates.unready(40 * MS, 50 * MS, now_ns=now) == ['/cmd']
    assert not gates.holding and gates.deadline_ns() is None
    gates.hold(['/cmd'], 50 * MS, now_ns=0)
    assert gates.unready(40 * MS, 50 * MS, now_ns=3 * SEC) == ['/cmd']
    assert gates.holding and gates.deadline_ns() == SEC and gates.no_writer(SEC) == ['/cmd']
    gates.hold((), 50 * MS, now_ns=0)
    assert not gates.holding


def test_a_message_from_the_writer_ends_the_margin():
    """A message proves the writer matched; a writer gone needs a new match and margin."""
    gates = _held_gate(margin=SEC)
    assert not gates.arrived('/cmd', now_ns=5)             # before any match: no proof
    gates.matched('/cmd', 1, now_ns=10)
    assert held(gates, 40 * MS, 50 * MS, now_ns=20) == ['/cmd']
    assert gates.arrived('/cmd', now_ns=30)                # releases the held frame
    assert not gates.arrived('/cmd', now_ns=31)            # nothing held or awaited now
    assert held(gates, 40 * MS, 50 * MS, now_ns=30) == []
    assert not gates.matched('/cmd', 2, now_ns=40)         # a second writer: nothing held
    assert gates.ready_ns(gates.gates['/cmd']) == 10
    gates.matched('/cmd', 0, now_ns=50)
    assert gates.ready_ns(gates.gates['/cmd']) is None
    assert held(gates, 40 * MS, 50 * MS, now_ns=60) == ['/cmd']
    gates.matched('/cmd', 1, now_ns=70)
    assert gates.ready_ns(gates.gates['/cmd']) == 70 + SEC
    assert not gates.matched('/other', 1, now_ns=80)       # not gated


def test_a_hold_counts_from_its_first_ask_and_again_at_a_new_step():
    """The timeout runs from the first hold of a frame; start=False only asks; count_again."""
    gates = _held_gate()
    held(gates, 40 * MS, 50 * MS, now_ns=0)
    held(gates, 40 * MS, 50 * MS, now_ns=500)
    assert gates.no_writer(SEC) == ['/cmd']
    gates.count_again(2 * SEC)
    assert gates.no_writer(3 * SEC - 1) == [] and gates.deadline_ns() == 3 * SEC
    assert held(gates, 40 * MS, 50 * MS, now_ns=0, start=False) == ['/cmd']
    assert not gates.holding and gates.no_writer(10 * SEC) == []
    held(gates, 40 * MS, 50 * MS, now_ns=0)
    held(gates, 90 * MS, 100 * MS, now_ns=700)              # another frame: counted afresh
    assert gates.no_writer(SEC) == [] and gates.no_writer(SEC + 700) == ['/cmd']


def test_a_frame_let_go_without_a_writer_waits_for_no_message():
    """Free run past the timeout: that frame goes and awaits nothing; the next is held again."""
    gates = _held_gate()
    held(gates, 40 * MS, 50 * MS, now_ns=0)
    gates.release(gates.no_writer(SEC))
    assert not gates.holding
    assert held(gates, 40 * MS, 50 * MS, now_ns=SEC) == []  # let go: not held again
    assert gates.published(40 * MS, 50 * MS, now_ns=SEC) == [] and not gates.awaited
    assert held(gates, 90 * MS, 100 * MS, now_ns=SEC) == ['/cmd']
    gates.reset()
    assert not gates.holding


def test_a_reset_ends_holds_and_frames_let_go():
    """Time went back: nothing is held, and a frame let go before is held again."""
    gates = _held_gate()
    held(gates, 40 * MS, 50 * MS, now_ns=0)
    gates.release(['/cmd'])
    gates.reset()
    assert held(gates, 40 * MS, 50 * MS, now_ns=0) == ['/cmd']
    gates.reset()
    assert not gates.holding and gates.waiting_for == []


def test_the_core_holds_the_next_frame_while_a_gate_waits_for_a_writer():
    """Core.holding(): a frame held for a writer holds free run like an awaited output."""
    core = settings.initial(dict(settings.DEFAULTS, output_gates='/cmd@0.05'))
    assert not core.holding()
    held(core.gates, 40 * MS, 50 * MS, now_ns=0)
    assert core.holding()
    core.gates.configure(parse_gates('/cmd@0.05:2'))       # a gate kept keeps its writers
    core.gates.matched('/cmd', 1, now_ns=0)
    core.gates.configure(parse_gates('/cmd@0.1'))
    assert core.gates.gates['/cmd'].writers == 1
