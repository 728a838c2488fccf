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

"""Unit tests for the pure time core, driven by a fake steady clock."""

from dataclasses import replace
from fractions import Fraction
import itertools
import re

from hypothesis import assume
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from sim_clock.core.rules import MAX_REAL_TIME_FACTOR
from sim_clock.core.rules import MAX_STEPS_PER_CALL
from sim_clock.core.rules import MAX_TIME_STEP_NS
from sim_clock.core.rules import Mode
from sim_clock.core.rules import owner_timeout_from_seconds
from sim_clock.core.rules import parse_mode
from sim_clock.core.rules import real_time_factor_from_float
from sim_clock.core.rules import Refused
from sim_clock.core.rules import seconds_to_ns
from sim_clock.core.rules import start_time_from_value
from sim_clock.core.rules import time_step_from_ms
from sim_clock.core.rules import time_step_from_seconds
from sim_clock.core.timeline import Timeline
from sim_clock.core.units import MAX_TIME_NS
from sim_clock.core.units import NS_PER_MS
from sim_clock.core.units import NS_PER_SEC
from sim_clock.core.units import split_ns

pytestmark = pytest.mark.fast

RT = Mode.REAL_TIME
SIM = Mode.SIMULATION
#: Where the fake steady clock starts: anything but zero, so no test relies on a zero origin.
START_NS = 1_000 * NS_PER_SEC
#: A poll limit that never binds.
NO_LIMIT = 10**18
#: The most one-day frames that fit before MAX_TIME_NS.
DAY_FRAMES = MAX_TIME_NS // MAX_TIME_STEP_NS


class FakeSteadyClock:
    """A steady clock that moves only when the test advances it."""

    def __init__(self, start_ns=START_NS):
        """Start at ``start_ns``."""
        self.ns = start_ns

    def __call__(self):
        """Return the current steady time in ns."""
        return self.ns

    def advance(self, ns):
        """Move the clock forward by ``ns``."""
        assert ns >= 0, 'a steady clock never goes back'
        self.ns += ns


def make_user_ids():
    """Return a deterministic new_user_id: anon-1, anon-2, ..."""
    counter = itertools.count(1)
    return lambda: f'anon-{next(counter)}'


@pytest.fixture
def clock():
    """Return a fresh fake steady clock, to inject as now_ns."""
    return FakeSteadyClock()


@pytest.fixture
def new_user_id():
    """Return a deterministic user_id generator."""
    return make_user_ids()


def enter(state, clock, new_user_id):
    """Return a timeline in ``state`` with time and frame already past zero."""
    if state == 'real_time':
        timeline = Timeline(clock, mode=RT, new_user_id=new_user_id)
        clock.advance(5 * NS_PER_MS)
        timeline.poll(1)
    elif state == 'sim_sync_off':
        timeline = Timeline(clock, new_user_id=new_user_id)
        clock.advance(35 * NS_PER_MS)
        timeline.poll(NO_LIMIT)
    elif state == 'sim_sync_on':
        timeline = Timeline(clock, sync=True, new_user_id=new_user_id)
        timeline.step('x', 3)
    elif state == 'sim_held_by_a':
        timeline = Timeline(clock, sync=True, new_user_id=new_user_id)
        timeline.sync_mode_cmd('a', True, 0)
        timeline.step('a', 3)
    elif state == 'near_end':
        timeline = Timeline(
            clock, sync=True, time_step_ns=MAX_TIME_STEP_NS, new_user_id=new_user_id)
        timeline.step('x', DAY_FRAMES)
    else:
        raise AssertionError(state)
    assert timeline.time_ns > 0 and timeline.frame > 0
    return timeline


# -- every transition ----------------------------------------------------------------------------

OPERATIONS = {
    'mode_real_time': lambda tl: tl.set_mode_sync(RT, False),
    'mode_simulation': lambda tl: tl.set_mode_sync(SIM, tl.status().sync),
    'sync_on': lambda tl: tl.set_sync(True),
    'sync_on_switch': lambda tl: tl.set_sync(True, switch_mode=True),
    'sync_off': lambda tl: tl.set_sync(False),
    'sync_off_switch': lambda tl: tl.set_sync(False, switch_mode=True),
    'start_a': lambda tl: tl.sync_mode_cmd('a', True, 0),
    'start_b': lambda tl: tl.sync_mode_cmd('b', True, 0),
    'start_empty': lambda tl: tl.sync_mode_cmd('', True, 0),
    'stop_a': lambda tl: tl.sync_mode_cmd('a', False, 0),
    'stop_b': lambda tl: tl.sync_mode_cmd('b', False, 0),
    'stop_empty': lambda tl: tl.sync_mode_cmd('', False, 0),
    'reset': lambda tl: tl.reset(),
    'param_real_time': lambda tl: tl.set_mode_sync(RT, False),
    'param_sync_off': lambda tl: tl.set_mode_sync(SIM, False),
    'param_sync_on': lambda tl: tl.set_mode_sync(SIM, True),
    'param_real_time_sync': lambda tl: tl.set_mode_sync(RT, True),
    'pause': lambda tl: tl.set_paused(True),
    'time_step': lambda tl: tl.set_time_step_ns(20 * NS_PER_MS),
    'rate': lambda tl: tl.set_real_time_factor(Fraction(2)),
}

BEFORE = {
    'real_time': (RT, False, ''),
    'sim_sync_off': (SIM, False, ''),
    'sim_sync_on': (SIM, True, ''),
    'sim_held_by_a': (SIM, True, 'a'),
}

RESET = True
KEEP = False


def refused(holder=''):
    """Return the expectation of a refusal whose Refused.holder is ``holder``."""
    return ('refused', holder)


# (starting state, operation, (reset?, mode, sync, owner) afterwards or refused(holder))
TRANSITIONS = [
    ('real_time', 'mode_real_time', (KEEP, RT, False, '')),
    ('real_time', 'mode_simulation', (RESET, SIM, False, '')),
    ('real_time', 'sync_on', refused()),
    ('real_time', 'sync_on_switch', (RESET, SIM, True, '')),
    ('real_time', 'sync_off', (KEEP, RT, False, '')),
    ('real_time', 'sync_off_switch', (KEEP, RT, False, '')),
    ('real_time', 'start_a', (RESET, SIM, True, 'a')),
    ('real_time', 'start_b', (RESET, SIM, True, 'b')),
    ('real_time', 'start_empty', (RESET, SIM, True, 'anon-1')),
    ('real_time', 'stop_a', (KEEP, RT, False, '')),
    ('real_time', 'stop_b', (KEEP, RT, False, '')),
    ('real_time', 'stop_empty', (KEEP, RT, False, '')),
    ('real_time', 'reset', (RESET, RT, False, '')),
    ('sim_sync_off', 'mode_real_time', (RESET, RT, False, '')),
    ('sim_sync_off', 'mode_simulation', (KEEP, SIM, False, '')),
    ('sim_sync_off', 'sync_on', (RESET, SIM, True, '')),
    ('sim_sync_off', 'sync_on_switch', (RESET, SIM, True, '')),
    ('sim_sync_off', 'sync_off', (KEEP, SIM, False, '')),
    ('sim_sync_off', 'sync_off_switch', (KEEP, SIM, False, '')),
    ('sim_sync_off', 'start_a', (RESET, SIM, True, 'a')),
    ('sim_sync_off', 'start_b', (RESET, SIM, True, 'b')),
    ('sim_sync_off', 'start_empty', (RESET, SIM, True, 'anon-1')),
    ('sim_sync_off', 'stop_a', (KEEP, SIM, False, '')),
    ('sim_sync_off', 'stop_b', (KEEP, SIM, False, '')),
    ('sim_sync_off', 'stop_empty', (KEEP, SIM, False, '')),
    ('sim_sync_off', 'reset', (RESET, SIM, False, '')),
    ('sim_sync_on', 'mode_real_time', (RESET, RT, False, '')),
    ('sim_sync_on', 'mode_simulation', (KEEP, SIM, True, '')),
    ('sim_sync_on', 'sync_on', (KEEP, SIM, True, '')),
    ('sim_sync_on', 'sync_on_switch', (KEEP, SIM, True, '')),
    ('sim_sync_on', 'sync_off', (RESET, SIM, False, '')),
    ('sim_sync_on', 'sync_off_switch', (RESET, SIM, False, '')),
    ('sim_sync_on', 'start_a', (KEEP, SIM, True, 'a')),
    ('sim_sync_on', 'start_b', (KEEP, SIM, True, 'b')),
    ('sim_sync_on', 'start_empty', (KEEP, SIM, True, 'anon-1')),
    ('sim_sync_on', 'stop_a', (RESET, SIM, False, '')),
    ('sim_sync_on', 'stop_b', (RESET, SIM, False, '')),
    ('sim_sync_on', 'stop_empty', (RESET, SIM, False, '')),
    ('sim_sync_on', 'reset', (RESET, SIM, True, '')),
    ('sim_held_by_a', 'mode_real_time', (RESET, RT, False, '')),
    ('sim_held_by_a', 'mode_simulation', (KEEP, SIM, True, 'a')),
    ('sim_held_by_a', 'sync_on', (KEEP, SIM, True, 'a')),
    ('sim_held_by_a', 'sync_on_switch', (KEEP, SIM, True, 'a')),
    ('sim_held_by_a', 'sync_off', (RESET, SIM, False, '')),
    ('sim_held_by_a', 'sync_off_switch', (RESET, SIM, False, '')),
    ('sim_held_by_a', 'start_a', (KEEP, SIM, True, 'a')),
    ('sim_held_by_a', 'start_b', refused('a')),
    ('sim_held_by_a', 'start_empty', refused('a')),
    ('sim_held_by_a', 'stop_a', (RESET, SIM, False, '')),
    ('sim_held_by_a', 'stop_b', refused('a')),
    ('sim_held_by_a', 'stop_empty', refused('a')),
    ('sim_held_by_a', 'reset', (RESET, SIM, True, 'a')),
    # set_mode_sync: the mode and sync parameters set together, at most one reset.
    ('real_time', 'param_real_time', (KEEP, RT, False, '')),
    ('real_time', 'param_sync_off', (RESET, SIM, False, '')),
    ('real_time', 'param_sync_on', (RESET, SIM, True, '')),
    ('sim_sync_off', 'param_real_time', (RESET, RT, False, '')),
    ('sim_sync_off', 'param_sync_off', (KEEP, SIM, False, '')),
    ('sim_sync_off', 'param_sync_on', (RESET, SIM, True, '')),
    ('sim_sync_on', 'param_real_time', (RESET, RT, False, '')),
    ('sim_sync_on', 'param_sync_off', (RESET, SIM, False, '')),
    ('sim_sync_on', 'param_sync_on', (KEEP, SIM, True, '')),
    ('sim_held_by_a', 'param_real_time', (RESET, RT, False, '')),
    ('sim_held_by_a', 'param_sync_off', (RESET, SIM, False, '')),
    ('sim_held_by_a', 'param_sync_on', (KEEP, SIM, True, 'a')),
] + [
    # Sync with mode real_time is never a valid pair.
    (state, 'param_real_time_sync', refused()) for state in BEFORE
] + [
    # Pause, rate and step changes never reset, in any state.
    (state, operation, (KEEP,) + before)
    for state, before in BEFORE.items()
    for operation in ('pause', 'time_step', 'rate')
]


def test_transition_table_covers_every_state_and_operation():
    """The table has exactly one row per starting state and operation."""
    pairs = [(state, operation) for state, operation, _ in TRANSITIONS]
    assert sorted(pairs) == sorted(itertools.product(BEFORE, OPERATIONS))


@pytest.mark.parametrize(
    'state,operation,expected',
    [pytest.param(*row, id=f'{row[0]}-{row[1]}') for row in TRANSITIONS])
def test_transition(clock, new_user_id, state, operation, expected):
    """Each operation resets exactly when the mode rules say and leaves the stated state."""
    timeline = enter(state, clock, new_user_id)
    before = timeline.status()
    assert (before.mode, before.sync, before.holder) == BEFORE[state]
    if expected[0] == 'refused':
        with pytest.raises(Refused) as info:
            OPERATIONS[operation](timeline)
        assert info.value.holder == expected[1]
        assert timeline.status() == before
        return
    OPERATIONS[operation](timeline)
    after = timeline.status()
    resets, mode, sync, owner = expected
    assert after.epoch == before.epoch + int(resets)
    assert (after.mode, after.sync, after.holder) == (mode, sync, owner)
    assert (after.time_ns == 0 and after.frame == 0) == resets
    if not resets:
        assert (after.time_ns, after.frame) == (before.time_ns, before.frame)


def test_reset_keeps_pause_rate_step_and_timeout(clock):
    """~/reset changes time, frame and epoch only."""
    timeline = enter('sim_sync_off', clock, make_user_ids())
    timeline.set_paused(True)
    timeline.set_real_time_factor(Fraction(3, 7))
    timeline.set_time_step_ns(123)
    timeline.set_holder_timeout_ns(5)
    before = timeline.status()
    timeline.reset()
    assert timeline.status() == replace(before, time_ns=0, frame=0, epoch=before.epoch + 1)


# -- refusals ------------------------------------------------------------------------------------

STEPS_RANGE = f'steps must be between 1 and {MAX_STEPS_PER_CALL}'
STEP_NS_RANGE = f'time_step must be between 1 and {MAX_TIME_STEP_NS} ns'
RTF_RANGE = f'real_time_factor must be between 0 (as fast as possible) and {MAX_REAL_TIME_FACTOR}'
LONG_ID = 'x' * 10**6

# (starting state, request, fragment of the reason, Refused.holder)
BAD_REQUESTS = [
    pytest.param('sim_held_by_a', lambda tl: tl.step('a', 0), STEPS_RANGE, '', id='step-0'),
    pytest.param('sim_held_by_a', lambda tl: tl.step('a', -1), STEPS_RANGE, '', id='step-neg'),
    pytest.param(
        'sim_held_by_a', lambda tl: tl.step('a', 2**64 - 1), STEPS_RANGE, '', id='step-u64max'),
    pytest.param(
        'sim_held_by_a', lambda tl: tl.step('a', MAX_STEPS_PER_CALL + 1), STEPS_RANGE, '',
        id='step-above-max'),
    pytest.param(
        'sim_held_by_a', lambda tl: tl.step('a', 1.0), 'steps must be a whole number', '',
        id='step-float'),
    pytest.param(
        'sim_held_by_a', lambda tl: tl.step('a', True), 'steps must be a whole number', '',
        id='step-bool'),
    pytest.param(
        'near_end', lambda tl: tl.step('x', 1), 'would pass the latest representable time', '',
        id='step-overflow'),
    pytest.param(
        'sim_held_by_a', lambda tl: tl.step('b', 1), "held by 'a'; only that user_id may step",
        'a', id='step-non-holder'),
    pytest.param(
        'sim_held_by_a', lambda tl: tl.step('', 1), "held by 'a'; only that user_id may step",
        'a', id='step-anonymous-non-holder'),
    pytest.param(
        'real_time', lambda tl: tl.step('x', 1), 'switch to simulation with sync on', '',
        id='step-real-time'),
    pytest.param(
        'sim_sync_off', lambda tl: tl.step('x', 1), 'turn sync mode on', '',
        id='step-free-run'),
    pytest.param(
        'sim_sync_on', lambda tl: tl.step(LONG_ID, 1), 'at most 256 allowed', '',
        id='step-long-user-id'),
    pytest.param(
        'sim_sync_on', lambda tl: tl.step('a\x00', 1), 'printable text', '',
        id='step-nul-user-id'),
    pytest.param(
        'sim_sync_on', lambda tl: tl.sync_mode_cmd(LONG_ID, True, 0), 'at most 256 allowed', '',
        id='cmd-long-user-id'),
    pytest.param(
        'sim_sync_on', lambda tl: tl.sync_mode_cmd('\x00', True, 0), 'printable text', '',
        id='cmd-nul-user-id'),
    pytest.param(
        'sim_held_by_a', lambda tl: tl.sync_mode_cmd('b', True, 0),
        "held by 'a'; another user_id cannot start", 'a', id='cmd-start-non-holder'),
    pytest.param(
        'sim_held_by_a', lambda tl: tl.sync_mode_cmd('b', False, 0),
        "held by 'a'; another user_id cannot stop", 'a', id='cmd-stop-non-holder'),
    pytest.param(
        'sim_held_by_a', lambda tl: tl.sync_mode_cmd('', True, 10),
        "held by 'a'; another user_id cannot start", 'a', id='cmd-start-anonymous'),
    pytest.param(
        'sim_held_by_a', lambda tl: tl.sync_mode_cmd('', False, 0),
        "held by 'a'; another user_id cannot stop", 'a', id='cmd-stop-anonymous'),
    pytest.param(
        'sim_sync_on', lambda tl: tl.sync_mode_cmd('a', True, 86_400_001),
        'time_step must be between 1 and 86400000 ms', '', id='cmd-step-too-long'),
    pytest.param(
        'real_time', lambda tl: tl.set_sync(True), "sync applies to mode 'simulation' only", '',
        id='set-sync-real-time'),
    pytest.param(
        'sim_sync_off', lambda tl: tl.set_time_step_ns(0), STEP_NS_RANGE, '', id='step-ns-0'),
    pytest.param(
        'sim_sync_off', lambda tl: tl.set_time_step_ns(-1), STEP_NS_RANGE, '', id='step-ns-neg'),
    pytest.param(
        'sim_sync_off', lambda tl: tl.set_time_step_ns(MAX_TIME_STEP_NS + 1), STEP_NS_RANGE, '',
        id='step-ns-above-max'),
    pytest.param(
        'sim_sync_off', lambda tl: tl.set_time_step_ns(1.5), STEP_NS_RANGE, '',
        id='step-ns-float'),
    pytest.param(
        'sim_sync_off', lambda tl: tl.set_time_step_ns(True), STEP_NS_RANGE, '',
        id='step-ns-bool'),
    pytest.param(
        'sim_sync_off', lambda tl: tl.set_real_time_factor(Fraction(-1)), RTF_RANGE, '',
        id='rate-neg'),
    pytest.param(
        'sim_sync_off', lambda tl: tl.set_real_time_factor(Fraction(MAX_REAL_TIME_FACTOR + 1)),
        RTF_RANGE, '', id='rate-above-max'),
    pytest.param(
        'sim_held_by_a', lambda tl: tl.set_holder_timeout_ns(-1), 'owner_timeout must be >= 0',
        '', id='owner-timeout-neg'),
]


@pytest.mark.parametrize('state,request_,reason,holder', BAD_REQUESTS)
def test_bad_request_is_refused_and_changes_nothing(
        clock, new_user_id, state, request_, reason, holder):
    """A bad request raises Refused, says what is allowed and leaves the state as it was."""
    timeline = enter(state, clock, new_user_id)
    before = timeline.status()
    with pytest.raises(Refused, match=re.escape(reason)) as info:
        request_(timeline)
    assert info.value.holder == holder
    assert timeline.status() == before


@pytest.mark.parametrize('request_', [
    pytest.param(lambda tl: tl.sync_mode_cmd('b', True, 86_400_001), id='bad-time-step'),
    pytest.param(lambda tl: tl.sync_mode_cmd(LONG_ID, True, 0), id='long-user-id'),
])
def test_refused_sync_mode_cmd_names_the_holder(clock, new_user_id, request_):
    """Any refused sync_mode_cmd while 'a' holds sync names 'a' as the holder."""
    timeline = enter('sim_held_by_a', clock, new_user_id)
    before = timeline.status()
    with pytest.raises(Refused) as info:
        request_(timeline)
    assert timeline.status() == before
    assert info.value.holder == 'a'


NAN = float('nan')
INF = float('inf')
STEP_S_RANGE = 'time_step must be between 1e-09 and 86400 s'
MS_RANGE = 'time_step must be between 1 and 86400000 ms'
RTF_FLOAT_RANGE = 'real_time_factor must be between 0 (as fast as possible) and 10000'
MODE_NAMES = 'mode must be one of real_time, simulation'


@pytest.mark.parametrize('convert,value,reason', [
    (time_step_from_seconds, 0, STEP_S_RANGE),
    (time_step_from_seconds, 0.0, STEP_S_RANGE),
    (time_step_from_seconds, -0.01, STEP_S_RANGE),
    (time_step_from_seconds, 1e-10, STEP_S_RANGE),
    (time_step_from_seconds, NAN, 'time_step must be a finite number'),
    (time_step_from_seconds, INF, 'time_step must be a finite number'),
    (time_step_from_seconds, -INF, 'time_step must be a finite number'),
    (time_step_from_seconds, 1e6 * 86_400.0, STEP_S_RANGE),
    (time_step_from_seconds, '0.01', 'time_step must be a number'),
    (time_step_from_ms, 86_400_001, MS_RANGE),
    (time_step_from_ms, 0, MS_RANGE),
    (time_step_from_ms, -1, MS_RANGE),
    (time_step_from_ms, 1.5, 'time_step must be a whole number of ms'),
    (time_step_from_ms, True, 'time_step must be a whole number of ms'),
    (real_time_factor_from_float, NAN, 'real_time_factor must be a finite number'),
    (real_time_factor_from_float, INF, 'real_time_factor must be a finite number'),
    (real_time_factor_from_float, -1.0, RTF_FLOAT_RANGE),
    (real_time_factor_from_float, MAX_REAL_TIME_FACTOR + 0.5, RTF_FLOAT_RANGE),
    (real_time_factor_from_float, 1e300, RTF_FLOAT_RANGE),
    (parse_mode, 'realtime', MODE_NAMES),
    (parse_mode, '', MODE_NAMES),
    (parse_mode, 'Simulation', MODE_NAMES),
    (owner_timeout_from_seconds, -1.0, 'owner_timeout must be >= 0 s'),
    (owner_timeout_from_seconds, NAN, 'owner_timeout must be a finite number'),
    (seconds_to_ns, None, 'must be a number'),
])
def test_bad_value_is_refused(convert, value, reason):
    """Parameter converters refuse bad values with a reason that says what is allowed."""
    with pytest.raises(Refused, match=re.escape(reason)):
        convert(value)


@pytest.mark.parametrize('convert,value,expected', [
    (time_step_from_seconds, 86_400.0, MAX_TIME_STEP_NS),
    (time_step_from_seconds, 1e-9, 1),
    (time_step_from_seconds, 0.01, 10 * NS_PER_MS),
    (time_step_from_seconds, 1, NS_PER_SEC),
    (time_step_from_ms, 1, NS_PER_MS),
    (time_step_from_ms, 86_400_000, MAX_TIME_STEP_NS),
    (real_time_factor_from_float, 0.0, Fraction(0)),
    (real_time_factor_from_float, 0.1, Fraction(1, 10)),
    (real_time_factor_from_float, float(MAX_REAL_TIME_FACTOR), Fraction(MAX_REAL_TIME_FACTOR)),
    (parse_mode, 'real_time', RT),
    (parse_mode, 'simulation', SIM),
    (owner_timeout_from_seconds, 0.0, 0),
    (owner_timeout_from_seconds, 2.5, 2_500_000_000),
    (split_ns, MAX_TIME_NS, (2**31 - 1, NS_PER_SEC - 1)),
    (split_ns, 1_500_000_000, (1, 500_000_000)),
])
def test_good_value_is_converted_exactly(convert, value, expected):
    """Values at and inside the limits convert exactly."""
    assert convert(value) == expected


# -- stepping ------------------------------------------------------------------------------------

def test_step_returns_the_new_frame_times(clock, new_user_id):
    """A step returns the time of every new frame, in order."""
    timeline = Timeline(clock, sync=True, time_step_ns=7, new_user_id=new_user_id)
    user_id, _ = timeline.sync_mode_cmd('', True, 0)
    assert user_id == 'anon-1'
    assert list(timeline.step(user_id, 3)) == [7, 14, 21]
    assert list(timeline.step(user_id, 1)) == [28]
    assert (timeline.frame, timeline.time_ns) == (4, 28)


def test_step_to_a_target_frame_is_retry_safe(clock):
    """target_frame: up to it once; reached or passed: nothing advances, no change recorded."""
    timeline = Timeline(clock, sync=True, time_step_ns=5)
    assert list(timeline.step('', 1, target_frame=3)) == [5, 10, 15]
    timeline.take_changes()
    for target in (3, 2):
        assert list(timeline.step('', 1, target_frame=target)) == []
        assert (timeline.frame, timeline.time_ns, timeline.take_changes()) == (3, 15, [])
    assert list(timeline.step('', 1, target_frame=4)) == [20]
    with pytest.raises(Refused, match='steps must be between 1 and'):
        timeline.step('', 1, target_frame=4 + MAX_STEPS_PER_CALL + 1)
    with pytest.raises(Refused, match='target_frame must be 0'):
        timeline.step('', 1, target_frame=-1)
    assert timeline.frame == 4


@pytest.mark.parametrize('target_frame', [0, 9])
def test_a_step_expecting_an_old_epoch_is_refused(clock, target_frame):
    """epoch: a reset since the caller looked is refused, naming both; nothing changes."""
    timeline = Timeline(clock, sync=True, time_step_ns=5)
    timeline.step('', 2)
    timeline.reset()
    timeline.take_changes()
    with pytest.raises(Refused, match='epoch is 1, the request expected 0'):
        timeline.step('', 2, target_frame=target_frame, epoch=0)
    assert (timeline.frame, timeline.epoch, timeline.take_changes()) == (0, 1, [])
    assert len(timeline.step('', 2, target_frame=target_frame, epoch=1)) == (target_frame or 2)


def test_step_may_reach_the_last_day_but_not_pass_it(clock):
    """Steps up to MAX_TIME_NS are allowed; one more is refused."""
    timeline = Timeline(clock, sync=True, time_step_ns=MAX_TIME_STEP_NS)
    with pytest.raises(Refused, match='latest representable time'):
        timeline.step('x', DAY_FRAMES + 1)
    assert timeline.frame == 0
    frames = timeline.step('x', DAY_FRAMES)
    assert frames[-1] == timeline.time_ns == DAY_FRAMES * MAX_TIME_STEP_NS <= MAX_TIME_NS


def test_step_while_paused_in_free_run(clock):
    """Pause, then step, is allowed in free run and does not reset."""
    timeline = enter('sim_sync_off', clock, make_user_ids())
    before = timeline.status()
    timeline.set_paused(True)
    assert list(timeline.step('anyone', 2)) == [
        before.time_ns + before.time_step_ns, before.time_ns + 2 * before.time_step_ns]
    assert timeline.epoch == before.epoch


@settings(deadline=None, max_examples=60)
@given(
    steps=st.integers(1, 10_000),
    step_ns=st.integers(1, 10**9),
    data=st.data())
def test_n_steps_give_exactly_n_times_the_step(steps, step_ns, data):
    """N steps of S ns from zero give exactly N*S ns and frame N, however they are split."""
    cuts = sorted(data.draw(st.sets(st.integers(1, steps), max_size=20)) | {steps})
    chunks = [b - a for a, b in zip([0] + cuts, cuts)]
    whole = Timeline(FakeSteadyClock(), sync=True, time_step_ns=step_ns)
    split = Timeline(FakeSteadyClock(), sync=True, time_step_ns=step_ns)
    frames = whole.step('x', steps)
    assert len(frames) == steps
    assert frames[-1] == steps * step_ns
    for chunk in chunks:
        split.step('x', chunk)
    for timeline in (whole, split):
        assert (timeline.time_ns, timeline.frame) == (steps * step_ns, steps)


def test_a_million_steps_of_a_millisecond_are_a_thousand_seconds(clock):
    """10**6 steps of time_step 0.001 s are exactly 1000 s, never 999.999."""
    timeline = Timeline(clock, sync=True, time_step_ns=time_step_from_seconds(0.001))
    frames = timeline.step('x', 10**6)
    assert frames[-1] == timeline.time_ns == 1000 * NS_PER_SEC
    assert split_ns(timeline.time_ns) == (1000, 0)
    assert timeline.frame == 10**6


@pytest.mark.parametrize('text,expected', [
    ('0.001', NS_PER_MS),
    ('0.01', 10 * NS_PER_MS),
    ('0.1', 100 * NS_PER_MS),
    ('1.5', 1_500_000_000),
    ('0.000000001', 1),
    ('0.3', 300_000_000),
    ('86400', 86_400 * NS_PER_SEC),
    ('2147483647.999999999', 2_147_483_648 * NS_PER_SEC),
])
def test_seconds_to_ns_is_exact_for_decimal_literals(text, expected):
    """Seconds written in decimal convert to the nanoseconds they say (nearest for 17+ digits)."""
    assert seconds_to_ns(float(text)) == expected


@settings(deadline=None, max_examples=300)
@given(whole=st.integers(0, 999_999), places=st.integers(0, 9), data=st.data())
def test_seconds_to_ns_is_exact_for_any_short_decimal(whole, places, data):
    """Any decimal of at most 15 digits and 9 places converts exactly to ns."""
    fraction = data.draw(st.integers(0, 10**places - 1))
    text = f'{whole}.{fraction:0{places}d}' if places else str(whole)
    expected = whole * NS_PER_SEC + fraction * 10**(9 - places)
    assert seconds_to_ns(float(text)) == expected


# -- real-time mode ------------------------------------------------------------------------------

@pytest.mark.parametrize('advances', [
    [1],
    [999],
    [NS_PER_SEC + 7],
    [3, 0, 5, 11],
    [NS_PER_MS] * 10,
])
def test_real_time_follows_the_steady_clock(clock, advances):
    """In real-time mode, a poll after d ns of steady time gives time d exactly."""
    timeline = Timeline(clock, mode=RT)
    elapsed = 0
    for advance in advances:
        clock.advance(advance)
        elapsed += advance
        assert list(timeline.poll(1)) == ([elapsed] if advance else [])
        assert timeline.time_ns == elapsed
    assert not timeline.poll(1)


def test_real_time_pause_freezes_and_resume_does_not_jump(clock):
    """Pause freezes real time, including the unpolled part; resume goes on from there."""
    timeline = Timeline(clock, mode=RT)
    clock.advance(100)
    timeline.poll(1)
    clock.advance(20)
    assert timeline.set_paused(True)
    assert timeline.time_ns == 120
    clock.advance(10 * NS_PER_SEC)
    assert not timeline.poll(1)
    assert timeline.time_ns == 120
    assert timeline.set_paused(False)
    assert timeline.time_ns == 120
    assert not timeline.poll(1)
    clock.advance(30)
    assert list(timeline.poll(1)) == [150]
    assert timeline.epoch == 0


def test_real_time_stops_at_max_time(clock):
    """Real time stops at MAX_TIME_NS rather than overflow."""
    timeline = Timeline(clock, mode=RT)
    clock.advance(MAX_TIME_NS - 5)
    assert list(timeline.poll(1)) == [MAX_TIME_NS - 5]
    clock.advance(NS_PER_SEC)
    assert list(timeline.poll(1)) == [MAX_TIME_NS]
    clock.advance(NS_PER_SEC)
    assert not timeline.poll(1)
    assert timeline.time_ns == MAX_TIME_NS
    timeline.set_paused(True)
    timeline.set_paused(False)
    clock.advance(NS_PER_SEC)
    assert not timeline.poll(1)
    assert timeline.time_ns == MAX_TIME_NS


@pytest.mark.parametrize('change', [
    pytest.param(lambda tl: tl.set_real_time_factor(Fraction(5)), id='rate'),
    pytest.param(
        lambda tl: tl.set_time_step_ns(20 * NS_PER_MS), id='time_step'),
])
def test_real_time_ignores_rate_and_step_changes(clock, change):
    """Real time keeps following the steady clock at rate 1 across rate or step changes."""
    timeline = Timeline(clock, mode=RT)
    clock.advance(100)
    change(timeline)
    clock.advance(50)
    timeline.poll(1)
    assert timeline.time_ns == 150


# -- free run ------------------------------------------------------------------------------------

def span(frames):
    """Return (first, last, count) of frame times; cheap to compare and print when huge."""
    return (frames[0], frames[-1], len(frames)) if frames else ()


RATES = st.builds(Fraction, st.integers(1, 1000), st.integers(1, 1000))


@settings(deadline=None, max_examples=200)
@given(
    rate=RATES,
    step_ns=st.integers(1, 10**9),
    advances=st.lists(st.integers(0, 10**10), min_size=1, max_size=20))
def test_free_run_frames_follow_the_steady_clock(rate, step_ns, advances):
    """After W ns of steady time, frame is floor(W * rtf / S), however polls split W."""
    often_clock = FakeSteadyClock()
    once_clock = FakeSteadyClock()
    often = Timeline(often_clock, time_step_ns=step_ns, real_time_factor=rate)
    once = Timeline(once_clock, time_step_ns=step_ns, real_time_factor=rate)
    expected_time = 0
    for advance in advances:
        often_clock.advance(advance)
        once_clock.advance(advance)
        frames = often.poll(NO_LIMIT)
        assert span(frames) == span(range(expected_time + step_ns, often.time_ns + 1, step_ns))
        expected_time = often.time_ns
    once.poll(NO_LIMIT)
    wall = sum(advances)
    due = wall * rate.numerator // (rate.denominator * step_ns)
    for timeline in (often, once):
        assert (timeline.frame, timeline.time_ns) == (due, due * step_ns)


@settings(deadline=None, max_examples=200)
@given(
    first=RATES, second=RATES, step_ns=st.integers(1, 10**9),
    before=st.integers(0, 10**10), after=st.integers(0, 10**10))
def test_rate_change_never_makes_time_jump(first, second, step_ns, before, after):
    """A rate change keeps the current time and paces the next frames at the new rate."""
    assume(first != second)
    clock = FakeSteadyClock()
    timeline = Timeline(clock, time_step_ns=step_ns, real_time_factor=first)
    clock.advance(before)
    timeline.poll(NO_LIMIT)
    frame, time_ns = timeline.frame, timeline.time_ns
    timeline.set_real_time_factor(second)
    assert (timeline.frame, timeline.time_ns) == (frame, time_ns)
    assert not timeline.poll(NO_LIMIT)
    clock.advance(after)
    frames = timeline.poll(NO_LIMIT)
    new = after * second.numerator // (second.denominator * step_ns)
    assert span(frames) == span(range(time_ns + step_ns, time_ns + new * step_ns + 1, step_ns))
    assert timeline.frame == frame + new
    assert timeline.epoch == 0


def test_free_run_poll_limit_keeps_the_rest_due(clock):
    """Frames beyond the poll limit stay due for the next poll."""
    timeline = Timeline(clock)
    clock.advance(105 * NS_PER_MS)
    assert len(timeline.poll(4)) == 4
    assert not timeline.poll(0)
    assert len(timeline.poll(NO_LIMIT)) == 6
    assert timeline.time_ns == 100 * NS_PER_MS


def test_free_run_pause_freezes_and_resume_does_not_jump(clock):
    """Pause freezes free run; after resume, frames are paced from the resume."""
    timeline = Timeline(clock)
    clock.advance(35 * NS_PER_MS)
    timeline.poll(NO_LIMIT)
    assert timeline.frame == 3
    timeline.set_paused(True)
    clock.advance(10 * NS_PER_SEC)
    assert not timeline.poll(NO_LIMIT)
    timeline.set_paused(False)
    assert not timeline.poll(NO_LIMIT)
    clock.advance(25 * NS_PER_MS)
    assert list(timeline.poll(NO_LIMIT)) == [40 * NS_PER_MS, 50 * NS_PER_MS]


def test_as_fast_as_possible_gives_the_limit_and_stops_before_overflow(clock):
    """With rate 0 each poll gives exactly its limit, and time stops short of MAX_TIME_NS."""
    timeline = Timeline(clock, time_step_ns=MAX_TIME_STEP_NS, real_time_factor=Fraction(0))
    assert len(timeline.poll(7)) == 7
    assert len(timeline.poll(MAX_STEPS_PER_CALL)) == DAY_FRAMES - 7
    assert not timeline.poll(MAX_STEPS_PER_CALL)
    assert timeline.time_ns == DAY_FRAMES * MAX_TIME_STEP_NS <= MAX_TIME_NS


@pytest.mark.parametrize('state,expected', [
    ('real_time', None),
    ('sim_sync_on', None),
    ('sim_held_by_a', None),
    ('sim_sync_off', Fraction(10 * NS_PER_MS)),
])
def test_only_free_run_is_paced_by_the_wall_clock(clock, state, expected):
    """frame_period_ns is set in free run only; sync mode never advances by itself."""
    timeline = enter(state, clock, make_user_ids())
    assert timeline.frame_period_ns() == expected
    if expected is None and state != 'real_time':
        clock.advance(NS_PER_SEC)
        assert not timeline.poll(NO_LIMIT)
    timeline.set_real_time_factor(Fraction(0))
    assert timeline.frame_period_ns() == (None if expected is None else 0)
    timeline.set_paused(True)
    assert timeline.frame_period_ns() is None


# -- owner timeout -------------------------------------------------------------------------------

def test_silent_holder_lapses_and_another_user_takes_sync(clock, new_user_id):
    """A holder silent past the timeout is released; another user then takes sync, no reset."""
    timeline = enter('sim_held_by_a', clock, new_user_id)
    timeline.set_holder_timeout_ns(NS_PER_SEC)
    with pytest.raises(Refused):
        timeline.sync_mode_cmd('b', True, 0)
    clock.advance(NS_PER_SEC - 1)
    assert timeline.release_lapsed_holder() == ''
    assert timeline.holder == 'a'
    clock.advance(2)
    assert timeline.release_lapsed_holder() == 'a'
    assert timeline.release_lapsed_holder() == ''
    before = timeline.status()
    assert (before.holder, before.sync) == ('', True)
    assert timeline.sync_mode_cmd('b', True, 0)[0] == 'b'
    assert timeline.status() == replace(before, holder='b')


def test_lapsed_hold_is_taken_without_a_release_call(clock, new_user_id):
    """A lapsed hold does not block a step or sync_mode_cmd from another user."""
    timeline = enter('sim_held_by_a', clock, new_user_id)
    timeline.set_holder_timeout_ns(NS_PER_SEC)
    clock.advance(NS_PER_SEC + 1)
    epoch = timeline.epoch
    timeline.step('b', 1)
    assert timeline.sync_mode_cmd('c', True, 0)[0] == 'c'
    assert (timeline.holder, timeline.epoch) == ('c', epoch)


def test_holder_step_refreshes_the_lease(clock, new_user_id):
    """Each step by the holder restarts the timeout; refused calls by others do not."""
    timeline = enter('sim_held_by_a', clock, new_user_id)
    timeline.set_holder_timeout_ns(NS_PER_SEC)
    for _ in range(5):
        clock.advance(NS_PER_SEC - 1)
        timeline.step('a', 1)
        with pytest.raises(Refused):
            timeline.step('b', 1)
    assert timeline.release_lapsed_holder() == ''
    clock.advance(NS_PER_SEC - 1)
    assert timeline.release_lapsed_holder() == ''
    clock.advance(2)
    assert timeline.release_lapsed_holder() == 'a'


def test_owner_timeout_zero_never_lapses(clock, new_user_id):
    """An owner timeout of 0 keeps the hold however long the holder is silent."""
    timeline = enter('sim_held_by_a', clock, new_user_id)
    timeline.set_holder_timeout_ns(NS_PER_SEC)
    timeline.set_holder_timeout_ns(0)
    clock.advance(10**6 * NS_PER_SEC)
    assert timeline.release_lapsed_holder() == ''
    with pytest.raises(Refused) as info:
        timeline.sync_mode_cmd('b', True, 0)
    assert info.value.holder == 'a'


# -- random sequences of operations --------------------------------------------------------------

USERS = st.sampled_from(['', 'a', 'b'])
OPERATION_SEQUENCES = st.lists(st.one_of(
    st.tuples(st.just('tick'), st.integers(0, 10**10), st.integers(0, 50)),
    st.tuples(st.just('set_mode'), st.sampled_from(Mode)),
    st.tuples(st.just('set_sync'), st.booleans(), st.booleans()),
    st.tuples(st.just('set_mode_sync'), st.sampled_from(Mode), st.booleans()),
    st.tuples(st.just('sync_mode_cmd'), USERS, st.booleans(), st.sampled_from([0, 1, 10])),
    st.tuples(st.just('reset')),
    st.tuples(st.just('set_paused'), st.booleans()),
    st.tuples(st.just('set_time_step_ns'), st.sampled_from([1, 7, NS_PER_MS, NS_PER_SEC])),
    st.tuples(st.just('set_real_time_factor'), st.sampled_from(
        [Fraction(0), Fraction(1, 2), Fraction(1), Fraction(1000, 3)])),
    st.tuples(st.just('step'), USERS, st.integers(1, 50)),
    st.tuples(st.just('set_holder_timeout_ns'), st.sampled_from([0, NS_PER_SEC, 20 * NS_PER_SEC])),
    st.tuples(st.just('release_lapsed_holder')),
), max_size=60)


def apply(timeline, clock, operation):
    """Apply one operation; return whether it was refused."""
    name, *args = operation
    try:
        if name == 'tick':
            clock.advance(args[0])
            timeline.poll(args[1])
        elif name == 'set_sync':
            timeline.set_sync(args[0], switch_mode=args[1])
        elif name == 'set_mode':
            # A mode change keeps sync where the new mode has it.
            timeline.set_mode_sync(args[0], args[0] is SIM and timeline.status().sync)
        else:
            getattr(timeline, name)(*args)
    except Refused:
        return True
    return False


NEW_ID = object()


class RulesModel:
    """The mode, sync, holder and pause rules, written from DESIGN.md and MORAI's reset rules."""

    def __init__(self):
        """Start as a default Timeline: simulation, sync off, no holder, running."""
        self.mode = SIM
        self.sync = False
        self.holder = ''
        self.paused = False
        self.timeout_ns = 0
        self.seen_ns = 0

    def lapse(self, now_ns):
        """Drop a holder silent for the whole timeout."""
        if self.holder and self.timeout_ns and now_ns - self.seen_ns >= self.timeout_ns:
            self.holder = ''

    def expect(self, operation, now_ns):
        """Move to the state after ``operation``; return (resets, refused)."""
        name, *args = operation
        if name == 'set_mode':
            if args[0] is self.mode:
                return False, False
            self.mode, self.holder = args[0], ''
            self.sync = self.sync and self.mode is SIM
            return True, False
        if name == 'set_sync':
            sync, switch_mode = args
            if not sync:
                self.holder = ''
                resets, self.sync = self.sync, False
                return resets, False
            if self.mode is RT and not switch_mode:
                return False, True
            resets = not self.sync
            self.mode, self.sync = SIM, True
            return resets, False
        if name == 'set_mode_sync':
            mode, sync = args
            if mode is RT and sync:
                return False, True
            if (mode, sync) == (self.mode, self.sync):
                return False, False
            self.mode, self.sync, self.holder = mode, sync, ''
            return True, False
        if name == 'sync_mode_cmd':
            user_id, start, _ = args
            self.lapse(now_ns)
            if self.holder and user_id != self.holder:
                return False, True
            if start:
                resets = not self.sync
                self.mode, self.sync = SIM, True
                self.holder, self.seen_ns = user_id or NEW_ID, now_ns
                return resets, False
            resets, self.sync, self.holder = self.sync, False, ''
            return resets, False
        if name == 'step':
            self.lapse(now_ns)
            if (self.mode is RT or not (self.sync or self.paused)
                    or (self.holder and args[0] != self.holder)):
                return False, True
            if self.holder:
                self.seen_ns = now_ns
            return False, False
        if name == 'reset':
            return True, False
        if name == 'set_paused':
            self.paused = args[0]
        elif name == 'set_holder_timeout_ns':
            self.timeout_ns, self.seen_ns = args[0], now_ns
        elif name == 'release_lapsed_holder':
            self.lapse(now_ns)
        return False, False


@settings(deadline=None, max_examples=150)
@given(operations=OPERATION_SEQUENCES)
def test_time_never_goes_back_within_an_epoch(operations):
    """Under any sequence of operations, only a new epoch takes time back."""
    clock = FakeSteadyClock()
    timeline = Timeline(clock, new_user_id=make_user_ids())
    history = [(timeline.epoch, timeline.time_ns, timeline.frame)]
    for operation in operations:
        apply(timeline, clock, operation)
        history.append((timeline.epoch, timeline.time_ns, timeline.frame))
    for (epoch, time_ns, frame), (next_epoch, next_time_ns, next_frame) in zip(
            history, history[1:]):
        assert next_epoch >= epoch
        if next_epoch == epoch:
            assert next_time_ns >= time_ns
            assert next_frame >= frame
        else:
            assert next_epoch == epoch + 1
            assert (next_time_ns, next_frame) == (0, 0)


@settings(deadline=None, max_examples=150)
@given(operations=OPERATION_SEQUENCES)
def test_only_the_documented_transitions_reset(operations):
    """Epoch goes up by one exactly for the resetting operations; refusals change nothing."""
    clock = FakeSteadyClock()
    timeline = Timeline(clock, new_user_id=make_user_ids())
    model = RulesModel()
    for operation in operations:
        before = timeline.status()
        now_ns = clock.ns + (operation[1] if operation[0] == 'tick' else 0)
        resets, refused_ = model.expect(operation, now_ns)
        assert apply(timeline, clock, operation) == refused_, operation
        after = timeline.status()
        # Every reset is reported once, as a record of where time went.
        resets_reported = [change for change in timeline.take_changes() if change.reset]
        assert len(resets_reported) == int(resets), operation
        if resets_reported:
            last = resets_reported[-1]
            assert (last.epoch, last.time_after_ns, last.mode, last.sync) == (
                after.epoch, after.time_ns, after.mode, after.sync), operation
        if model.holder is NEW_ID:
            assert after.holder.startswith('anon-')
            model.holder = after.holder
        assert after.epoch == before.epoch + int(resets), operation
        if resets:
            assert (after.time_ns, after.frame) == (0, 0)
        if refused_:
            assert after == replace(before, holder=model.holder), operation
        assert (after.mode, after.sync, after.holder, after.paused) == (
            model.mode, model.sync, model.holder, model.paused), operation
        # What free run and its pace follow, kept with the state: as the state says.
        free = not model.paused and not (model.mode is SIM and model.sync)
        assert timeline.free_running is free, operation
        period = timeline.frame_period_ns()
        if not free or model.mode is RT:
            assert period is None, operation
        else:
            assert (period == 0) is (after.real_time_factor == 0), operation


# -- Timeline.seek -----------------------------------------------------------------------------

class _Steady:

    def __init__(self):
        self.ns = 10**12

    def __call__(self):
        return self.ns


def test_timeline_seek_is_a_reset_to_a_time():
    """Seek: time set, frame 0, epoch + 1, mode, sync and holder kept; steps go on from it."""
    timeline = Timeline(_Steady(), time_step_ns=10 * NS_PER_MS)
    user, _ = timeline.sync_mode_cmd('a', True, 0)
    timeline.step(user, 3)
    epoch = timeline.epoch
    timeline.seek(5 * NS_PER_SEC + 3, 'test seek')
    status = timeline.status()
    assert (status.time_ns, status.frame, status.epoch) == (5 * NS_PER_SEC + 3, 0, epoch + 1)
    assert (status.mode, status.sync, status.holder) == (Mode.SIMULATION, True, 'a')
    [change] = [c for c in timeline.take_changes() if c.reset][-1:]
    assert (change.cause, change.time_before_ns) == ('test seek', 30 * NS_PER_MS)
    assert list(timeline.step('a', 2)) == [5 * NS_PER_SEC + 3 + 10 * NS_PER_MS,
                                           5 * NS_PER_SEC + 3 + 20 * NS_PER_MS]


def test_timeline_seek_paces_free_run_from_the_new_time():
    """After a seek, free run counts its frames from there (no burst, no loss)."""
    steady = _Steady()
    timeline = Timeline(steady, time_step_ns=10 * NS_PER_MS)
    steady.ns += 50 * NS_PER_MS
    assert len(timeline.poll(100)) == 5
    timeline.seek(NS_PER_SEC)
    assert list(timeline.poll(100)) == []
    steady.ns += 20 * NS_PER_MS
    assert list(timeline.poll(100)) == [NS_PER_SEC + 10 * NS_PER_MS, NS_PER_SEC + 20 * NS_PER_MS]


def test_timeline_seek_in_real_time_mode():
    """Real-time mode follows the wall clock from the seek time on."""
    steady = _Steady()
    timeline = Timeline(steady, mode=Mode.REAL_TIME)
    timeline.seek(7 * NS_PER_SEC)
    steady.ns += 3 * NS_PER_MS
    assert list(timeline.poll(1)) == [7 * NS_PER_SEC + 3 * NS_PER_MS]


@pytest.mark.parametrize('time_ns', [-1, MAX_TIME_NS + 1, 1.5, True, '1'])
def test_timeline_seek_refuses_bad_times_unchanged(time_ns):
    """A seek outside 0..MAX_TIME_NS, or not an integer, changes nothing."""
    timeline = Timeline(_Steady())
    before = timeline.status()
    with pytest.raises(Refused, match='seek time must be between 0 and'):
        timeline.seek(time_ns)
    assert timeline.status() == before


def test_time_starts_and_resets_at_start_ns(clock):
    """start_ns: time starts there, frames are whole steps from it, every reset goes back."""
    start = 1_700_000_000 * NS_PER_SEC + 123_456_789
    timeline = Timeline(clock, sync=True, time_step_ns=7, start_ns=start)
    assert (timeline.time_ns, timeline.frame) == (start, 0)
    assert list(timeline.step('', 3)) == [start + 7, start + 14, start + 21]
    timeline.reset()
    assert (timeline.time_ns, timeline.frame, timeline.epoch) == (start, 0, 1)
    timeline.set_start_ns(5)  # applies at the next reset, not now
    assert timeline.time_ns == start
    timeline.set_mode_sync(Mode.SIMULATION, False)
    assert timeline.time_ns == 5


def test_time_starts_at_the_wall_clock_of_each_reset(clock):
    """start_ns None: the injected wall clock at the start and at every reset."""
    wall = FakeSteadyClock(1_800_000_000 * NS_PER_SEC)
    timeline = Timeline(clock, sync=True, start_ns=None, wall_ns=wall)
    assert timeline.time_ns == 1_800_000_000 * NS_PER_SEC
    wall.advance(42)
    timeline.reset()
    assert timeline.time_ns == 1_800_000_000 * NS_PER_SEC + 42
    timeline.seek(10)  # a seek goes where it is told
    assert timeline.time_ns == 10


@pytest.mark.parametrize('value, expected', [
    ('0', 0), (0, 0), (0.0, 0), ('wall', None), (1_700_000_000.5, 1_700_000_000_500_000_000),
    ('1700000000.123456789', 1_700_000_000_123_456_789), ('12.5', 12_500_000_000), (3, 3 * 10**9),
])
def test_start_time_values(value, expected):
    """start_time: 'wall', a number of seconds, or decimal text exact to the ns."""
    assert start_time_from_value(value) == expected


@pytest.mark.parametrize('value', [
    '-1', -1, -0.5, 'now', '1.0000000001', '1e9', float('nan'), float('inf'), True, '',
    MAX_TIME_NS, ' 1',
])
def test_start_time_refusals_say_what_is_allowed(value):
    """A bad start_time is refused with the forms allowed."""
    with pytest.raises(Refused, match="start_time must be 'wall'.*or seconds"):
        start_time_from_value(value)


def test_skip_moves_time_and_frame_without_frames_out(clock):
    """Frames gone over (a bag's empty span): time and frame move as a poll would move them."""
    timeline = Timeline(clock, real_time_factor=0, start_ns=START_NS)
    assert list(timeline.poll(2)) == [START_NS + 10 * NS_PER_MS, START_NS + 20 * NS_PER_MS]
    timeline.skip(1_000_000)
    assert (timeline.frame, timeline.time_ns) == (1_000_002, START_NS + 1_000_002 * 10 * NS_PER_MS)
    assert list(timeline.poll(1)) == [START_NS + 1_000_003 * 10 * NS_PER_MS]
    timeline.skip(0)
    assert timeline.frame == 1_000_003
    timeline.skip(10**30)  # never past the latest representable time
    assert MAX_TIME_NS - timeline.time_step_ns < timeline.time_ns <= MAX_TIME_NS
