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

"""The lease on sync mode on its own: who may step, start or stop, and when a lease lapses."""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from sim_clock.core.rules import Refused
from sim_clock.core.sync_lease import SyncLease
from sim_clock.core.units import NS_PER_SEC

pytestmark = pytest.mark.fast

#: Where the fake steady clock starts: anything but zero.
START_NS = 1_000 * NS_PER_SEC


class FakeSteadyClock:
    """A steady clock that moves only when the test advances it, counting its reads."""

    def __init__(self, start_ns=START_NS):
        """Start at ``start_ns``."""
        self.ns = start_ns
        self.reads = 0

    def __call__(self):
        """Return the current steady time in ns."""
        self.reads += 1
        return self.ns

    def advance(self, ns):
        """Move the clock forward by ``ns``."""
        assert ns >= 0, 'a steady clock never goes back'
        self.ns += ns


@pytest.fixture
def clock():
    """Return a fake steady clock at START_NS."""
    return FakeSteadyClock()


def held_by(user_id, clock, timeout_ns=0):
    """Return a lease that ``user_id`` took now, lapsing after ``timeout_ns``."""
    lease = SyncLease(clock, timeout_ns)
    lease.take(user_id)
    lease.heard_from()
    return lease


def test_nobody_holds_at_first_and_anyone_may_step_start_or_stop(clock):
    """A new lease has no holder: every user_id may step, start and stop; nothing lapses."""
    lease = SyncLease(clock, NS_PER_SEC)
    assert (lease.holder, lease.timeout_ns) == ('', NS_PER_SEC)
    for user_id in ('', 'a', 'b'):
        lease.check_step(user_id)
        lease.check_command(user_id, start=True)
        lease.check_command(user_id, start=False)
    clock.advance(10 * NS_PER_SEC)
    assert not lease.lapsed()
    assert clock.reads == 0, 'nothing to lapse: the clock is not read'


def test_only_the_holder_steps_and_a_refusal_names_it(clock):
    """Another user_id's step is refused with the holder named; the holder's passes."""
    lease = held_by('a', clock)
    lease.check_step('a')
    for other in ('', 'b', 'A'):
        with pytest.raises(Refused) as info:
            lease.check_step(other)
        assert info.value.holder == 'a'
        assert info.value.reason == "sync mode is held by 'a'; only that user_id may step"


@pytest.mark.parametrize('start,verb', [(True, 'start'), (False, 'stop')])
def test_only_the_holder_starts_or_stops_sync_mode(clock, start, verb):
    """Another user_id cannot start or stop sync mode (MORAI's rule); the holder can."""
    lease = held_by('a', clock)
    lease.check_command('a', start)
    with pytest.raises(Refused) as info:
        lease.check_command('b', start)
    assert info.value.holder == 'a'
    assert info.value.reason.startswith(
        f"sync mode is held by 'a'; another user_id cannot {verb} it")


def test_every_refusal_names_the_holder_or_nobody(clock):
    """refusal() carries the reason and the holder at the time, '' when nobody holds it."""
    lease = SyncLease(clock)
    assert (lease.refusal('no').reason, lease.refusal('no').holder) == ('no', '')
    lease.take('a')
    assert (lease.refusal('no').reason, lease.refusal('no').holder) == ('no', 'a')


def test_release_says_who_held_it(clock):
    """release() returns the holder it let go, then '' as nobody holds it any more."""
    lease = held_by('a', clock)
    assert lease.release() == 'a'
    assert lease.holder == ''
    assert lease.release() == ''
    lease.check_step('b')


def test_a_silent_holder_lapses_at_the_timeout_not_before(clock):
    """The lease lapses once the holder has been silent for the whole timeout."""
    lease = held_by('a', clock, NS_PER_SEC)
    clock.advance(NS_PER_SEC - 1)
    assert not lease.lapsed()
    clock.advance(1)
    assert lease.lapsed()
    assert lease.holder == 'a', 'lapsed() only says so; Timeline releases the holder'


def test_a_call_from_the_holder_restarts_the_timeout(clock):
    """heard_from() counts the timeout again from now."""
    lease = held_by('a', clock, NS_PER_SEC)
    for _ in range(5):
        clock.advance(NS_PER_SEC - 1)
        lease.heard_from()
    clock.advance(NS_PER_SEC - 1)
    assert not lease.lapsed()
    clock.advance(1)
    assert lease.lapsed()


def test_timeout_zero_never_lapses_and_a_new_timeout_counts_from_now(clock):
    """0 keeps a lease forever; setting a timeout starts it afresh."""
    lease = held_by('a', clock)
    clock.advance(10**6 * NS_PER_SEC)
    assert not lease.lapsed()
    lease.set_timeout_ns(NS_PER_SEC)
    assert not lease.lapsed()
    clock.advance(NS_PER_SEC)
    assert lease.lapsed()
    lease.set_timeout_ns(0)
    assert not lease.lapsed()


def test_a_negative_timeout_is_refused_and_changes_nothing(clock):
    """A negative timeout is refused, at creation and later, the timeout kept."""
    with pytest.raises(Refused, match='owner_timeout must be >= 0'):
        SyncLease(clock, -1)
    lease = held_by('a', clock, NS_PER_SEC)
    with pytest.raises(Refused, match='owner_timeout must be >= 0'):
        lease.set_timeout_ns(-1)
    assert lease.timeout_ns == NS_PER_SEC


def test_nobody_silent_means_nothing_lapses(clock):
    """Without a holder nothing lapses, whatever the timeout and the silence."""
    lease = held_by('a', clock, NS_PER_SEC)
    lease.release()
    clock.advance(10 * NS_PER_SEC)
    assert not lease.lapsed()


OPERATIONS = st.lists(st.one_of(
    st.tuples(st.just('advance'), st.integers(0, 3 * NS_PER_SEC)),
    st.tuples(st.just('take'), st.sampled_from(['a', 'b'])),
    st.tuples(st.just('heard_from'), st.none()),
    st.tuples(st.just('release'), st.none()),
    st.tuples(st.just('set_timeout_ns'), st.sampled_from([0, NS_PER_SEC, 2 * NS_PER_SEC])),
), max_size=40)


@settings(deadline=None, max_examples=200)
@given(operations=OPERATIONS)
def test_a_hold_lapses_exactly_when_its_holder_was_silent_for_the_timeout(operations):
    """
    Against a model: lapsed iff someone holds it, the timeout is set, and the silence reached it.

    Silence counts from the last call heard from a holder or the last timeout set.
    """
    clock = FakeSteadyClock()
    lease = SyncLease(clock)
    holder, timeout_ns, seen_ns = '', 0, 0
    for name, argument in operations:
        if name == 'advance':
            clock.advance(argument)
        elif name == 'take':
            lease.take(argument)
            holder = argument
        elif name == 'heard_from':
            lease.heard_from()
            seen_ns = clock.ns if holder else seen_ns
        elif name == 'release':
            assert lease.release() == holder
            holder = ''
        else:
            lease.set_timeout_ns(argument)
            timeout_ns, seen_ns = argument, clock.ns
        expected = bool(holder) and bool(timeout_ns) and clock.ns - seen_ns >= timeout_ns
        assert (lease.holder, lease.timeout_ns, lease.lapsed()) == (holder, timeout_ns, expected)
        for user_id in ('a', 'b'):
            may = not holder or user_id == holder
            try:
                lease.check_step(user_id)
                lease.check_command(user_id, start=True)
            except Refused as refused:
                assert not may and refused.holder == holder
            else:
                assert may
