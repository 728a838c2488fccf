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

"""The participant barrier's rules, without ROS: who is due, who is awaited, who is late."""

from hypothesis import given
from hypothesis import strategies as st
import pytest
from sim_clock.core.barrier import Barrier
from sim_clock.core.barrier import MAX_PARTICIPANTS
from sim_clock.core.rules import Refused
from sim_clock.core.waits import Timeout

pytestmark = pytest.mark.fast

MS = 1_000_000


def test_every_frame_participant_is_awaited_each_frame():
    """Period 0: each frame waits for it, and its done releases the wait."""
    barrier = Barrier()
    barrier.join('a', 0)
    for t in (10 * MS, 20 * MS, 30 * MS):
        assert barrier.clear
        assert barrier.published(t, now_ns=t) == ['a']
        assert not barrier.clear and barrier.waiting_for == ['a']
        assert not barrier.done('a', t - 1, now_ns=t)  # an older time does not release
        assert barrier.done('a', t, now_ns=t + 3)
    assert barrier.participants['a'].slowest_ns == 3
    assert barrier.participants['a'].last_done_ns == 30 * MS


def test_awaited_have_answered_once_every_awaited_participant_said_a_done():
    """Nobody awaited: no; one awaited that never said a done: no; after a reset: no again."""
    barrier = Barrier()
    barrier.join('a', 0)
    assert not barrier.awaited_have_answered
    barrier.published(10 * MS, now_ns=0)
    assert not barrier.awaited_have_answered  # a's first frame: its done may be lost
    barrier.done('a', 10 * MS, now_ns=1)
    barrier.join('b', 0)
    barrier.published(20 * MS, now_ns=2)
    assert not barrier.awaited_have_answered  # b has said nothing yet
    barrier.done('b', 20 * MS, now_ns=3)
    assert barrier.waiting_for == ['a']
    assert barrier.awaited_have_answered  # a, still awaited, answered a frame before
    barrier.reset()
    barrier.published(10 * MS, now_ns=6)
    assert not barrier.awaited_have_answered


def test_period_makes_only_some_frames_due():
    """A 30 ms participant on 10 ms frames: the first frame after joining, then every third."""
    barrier = Barrier()
    barrier.join('slow', 30 * MS)
    due = []
    for t in range(10 * MS, 110 * MS, 10 * MS):
        if barrier.published(t, now_ns=0):
            due.append(t)
            barrier.done('slow', t, now_ns=0)
    assert due == [10 * MS, 40 * MS, 70 * MS, 100 * MS]


def test_frames_until_due_lets_free_run_batch_up_to_the_next_due_frame():
    """Free run may publish frames in a batch that ends on the next frame due for anyone."""
    barrier = Barrier()
    assert barrier.frames_until_due(0, 10 * MS, limit=100) == 100
    barrier.join('slow', 30 * MS)
    assert barrier.frames_until_due(0, 10 * MS, limit=100) == 1
    barrier.published(10 * MS, now_ns=0)
    barrier.done('slow', 10 * MS, now_ns=0)
    assert barrier.frames_until_due(10 * MS, 10 * MS, limit=100) == 3
    assert barrier.frames_until_due(10 * MS, 10 * MS, limit=2) == 2
    barrier.join('fast', 0)
    assert barrier.frames_until_due(10 * MS, 10 * MS, limit=100) == 1


def test_leave_releases_a_wait_and_join_counts_from_the_next_frame():
    """Leaving while awaited completes the frame; a newcomer is not awaited for the current one."""
    barrier = Barrier()
    barrier.join('a', 0)
    barrier.published(10 * MS, now_ns=0)
    barrier.join('b', 0)
    assert barrier.waiting_for == ['a']
    assert barrier.leave('a') and not barrier.leave('a')
    assert barrier.clear
    assert barrier.published(20 * MS, now_ns=0) == ['b']


def test_late_participants_are_named():
    """Awaited for at least the timeout: late; the others are not."""
    barrier = Barrier(timeout=Timeout(600))
    barrier.join('a', 0)
    barrier.join('b', 0)
    assert barrier.overdue(now_ns=0) == ([], None)
    barrier.published(10 * MS, now_ns=1000)
    barrier.done('b', 10 * MS, now_ns=1100)
    assert barrier.overdue(now_ns=1500) == ([], 1600)
    assert barrier.overdue(now_ns=1600) == (['a'], None)  # late: no deadline to come
    barrier.count_again(now_ns=2000)  # a new step: a new timeout for the one still awaited
    assert barrier.overdue(now_ns=2500) == ([], 2600)
    assert barrier.overdue(now_ns=2600) == (['a'], None)


def test_reset_makes_the_next_frame_due_for_everyone():
    """After time went back, nobody is awaited and the next frame is due for all."""
    barrier = Barrier()
    barrier.join('slow', 100 * MS)
    barrier.published(50 * MS, now_ns=0)
    barrier.reset()
    assert barrier.clear
    assert barrier.published(10 * MS, now_ns=0) == ['slow']


@pytest.mark.parametrize('name, period, reason', [
    ('', 0, 'needs a name'),
    ('a\n', 0, 'printable'),
    ('a', -1, 'period must be between 0'),
    ('a', 1.5, 'period must be between 0'),
    ('a', True, 'period must be between 0'),
])
def test_bad_join_is_refused_and_changes_nothing(name, period, reason):
    """A bad name or period is refused with what is allowed."""
    barrier = Barrier()
    with pytest.raises(Refused, match=reason):
        barrier.join(name, period)
    assert barrier.participants == {}


def test_participants_are_bounded():
    """At most MAX_PARTICIPANTS; a joined one may join again (a new period)."""
    barrier = Barrier()
    for index in range(MAX_PARTICIPANTS):
        barrier.join(f'p{index}', 0)
    with pytest.raises(Refused, match='must leave'):
        barrier.join('one more', 0)
    assert barrier.join('p0', 5).period_ns == 5


@given(periods=st.lists(st.integers(0, 50), min_size=1, max_size=4),
       frames=st.integers(1, 60), step=st.integers(1, 7))
def test_no_frame_goes_out_while_a_participant_is_awaited(periods, frames, step):
    """Publishing only while clear, every due frame is finished before the next goes out."""
    barrier = Barrier()
    for index, period in enumerate(periods):
        barrier.join(f'p{index}', period)
    finished = {f'p{index}': [] for index in range(len(periods))}
    t = 0
    for _ in range(frames):
        assert barrier.clear
        t += step
        for name in barrier.published(t, now_ns=t):
            finished[name].append(t)
            assert barrier.done(name, t, now_ns=t)
    for index, period in enumerate(periods):
        times = finished[f'p{index}']
        assert times[0] == step  # the first frame after joining
        assert all(b - a >= period for a, b in zip(times, times[1:]))
        # No gap longer than a period plus a frame: none of its due frames was skipped.
        assert all(b - a < max(period, 1) + step for a, b in zip(times, times[1:]))


def test_next_time_named_in_done_sets_the_next_frame_due():
    """A done naming the next time needed makes the first frame at or after it the next due."""
    barrier = Barrier()
    barrier.join('a', 100 * MS)
    assert barrier.published(10 * MS, now_ns=0) == ['a']  # the first frame after joining
    assert barrier.done('a', 10 * MS, now_ns=0, next_ns=50 * MS)
    assert barrier.frames_until_due(10 * MS, 10 * MS, 100) == 4  # 20, 30, 40, then 50
    assert barrier.published(40 * MS, now_ns=0) == []
    assert barrier.published(50 * MS, now_ns=0) == ['a']
    # Next needed between two frames: the first frame after it.
    assert barrier.done('a', 50 * MS, now_ns=0, next_ns=75 * MS)
    assert barrier.frames_until_due(50 * MS, 10 * MS, 100) == 3  # 60, 70, 80
    assert barrier.published(70 * MS, now_ns=0) == []
    assert barrier.published(80 * MS, now_ns=0) == ['a']
    # No next time (0, or not later than the time done): the period rules again.
    assert barrier.done('a', 80 * MS, now_ns=0, next_ns=0)
    assert barrier.frames_until_due(80 * MS, 10 * MS, 100) == 10
    assert barrier.published(170 * MS, now_ns=0) == []
    assert barrier.published(180 * MS, now_ns=0) == ['a']
    assert barrier.done('a', 180 * MS, now_ns=0, next_ns=180 * MS)
    assert barrier.participants['a'].next_ns is None


def test_next_time_of_an_older_done_is_ignored_and_a_reset_forgets_it():
    """Only the newest done's next time counts; after a reset the next frame is due again."""
    barrier = Barrier()
    barrier.join('a', 0)
    barrier.published(10 * MS, now_ns=0)
    barrier.done('a', 10 * MS, now_ns=0, next_ns=100 * MS)
    barrier.done('a', 5 * MS, now_ns=0, next_ns=20 * MS)  # older: changes nothing
    assert barrier.participants['a'].next_ns == 100 * MS
    barrier.reset()
    assert barrier.participants['a'].next_ns is None
    assert barrier.published(0, now_ns=0) == ['a']


def _rounds_barrier(*names):
    barrier = Barrier()
    for name in names:
        barrier.join(name, 0)
    barrier.published(10, now_ns=0)
    return barrier


def test_a_frame_takes_rounds_while_its_participants_publish():
    """Round k + 1 starts with round k's totals; a round that publishes nothing ends it."""
    barrier = _rounds_barrier('a', 'b')
    assert barrier.done('a', 10, 1, round_=0, counts={'/x': 2}, in_rounds=True)
    assert not barrier.clear and barrier.next_round(2) is None  # b has not answered
    assert barrier.done('b', 10, 3, round_=0, counts={'/x': 1, '/y': 1}, in_rounds=True)
    assert barrier.clear
    assert barrier.next_round(4) == (10, 1, {'/x': 3, '/y': 1})
    assert barrier.waiting_for == ['a', 'b']
    assert not barrier.done('a', 10, 5, round_=0, in_rounds=True)  # round 0 again: stale
    assert barrier.done('a', 10, 6, round_=1, in_rounds=True)
    assert barrier.done('b', 10, 7, round_=1, in_rounds=True)
    assert barrier.clear and barrier.next_round(8) is None
    assert barrier.take_runaway() == ((), ())


def test_a_participant_without_rounds_is_not_awaited_in_them():
    """A participant that says nothing of rounds finishes its frame at round 0, as before."""
    barrier = _rounds_barrier('old', 'new')
    assert barrier.done('old', 10, 1)
    assert barrier.done('new', 10, 2, counts={'/x': 1}, in_rounds=True)
    assert barrier.next_round(3) == (10, 1, {'/x': 1})
    assert barrier.waiting_for == ['new']


def test_a_cycle_that_never_goes_quiet_is_stopped_and_named():
    """After MAX_ROUNDS the frame ends; those who published in the last two rounds are named."""
    from sim_clock.core.barrier import MAX_ROUNDS
    barrier = _rounds_barrier('a', 'b')
    number = 0
    for number in range(MAX_ROUNDS):
        talker, topic = ('a', '/ping') if number % 2 == 0 else ('b', '/pong')
        for name in ('a', 'b'):
            counts = {topic: 1} if name == talker else {}
            assert barrier.done(name, 10, number, round_=number, counts=counts,
                                in_rounds=True)
        if barrier.next_round(number) is None:
            break
    assert number == MAX_ROUNDS - 1 and barrier.clear
    assert barrier.take_runaway() == (('a', 'b'), ('/ping', '/pong'))
    assert barrier.take_runaway() == ((), ())


def test_a_reset_ends_the_rounds_of_the_frame_out():
    """After a reset nothing is awaited and a done of the old frame's rounds counts for none."""
    barrier = _rounds_barrier('a')
    barrier.done('a', 10, 1, counts={'/x': 1}, in_rounds=True)
    assert barrier.next_round(2) is not None
    barrier.reset()
    assert barrier.clear and barrier.next_round(3) is None


def test_a_participant_in_rounds_is_due_at_every_frame_whatever_its_next():
    """Done.next is ignored for a participant that takes part in rounds."""
    barrier = _rounds_barrier('a')
    assert barrier.done('a', 10, 1, next_ns=1_000_000_000, in_rounds=True)
    assert barrier.published(20, now_ns=2) == ['a']


def _next_frame_barrier(*names, topics=()):
    barrier = Barrier()
    for name in names:
        barrier.join(name, 0, next_frame=True, topics=topics)
    barrier.published(10, now_ns=0)
    return barrier


def test_next_frame_dones_start_no_round_and_carry_their_counts_to_the_next_frame():
    """What next_frame participants published is said once, as the next frame goes out."""
    barrier = _next_frame_barrier('a', 'b')
    assert barrier.done('a', 10, 1, counts={'/x': 2, '/y': 0}, next_frame=True)
    assert barrier.done('b', 10, 2, counts={'/z': 1}, next_frame=True)
    assert barrier.clear and barrier.next_round(3) is None  # no round within the frame
    assert barrier.take_carried() == ({'/x': 2, '/y': 0, '/z': 1}, {})
    assert barrier.take_carried() == ({'/x': 0, '/y': 0, '/z': 0}, {})  # the time again
    assert barrier.published(20, now_ns=4) == ['a', 'b']  # due at every frame
    assert not barrier.clear


def test_next_frame_topics_said_at_join_are_named_before_any_done():
    """Every Round names the topics joined with; a done answered again is counted once."""
    barrier = _next_frame_barrier('a', topics=['/x'])
    assert barrier.take_carried() == ({'/x': 0}, {})
    barrier.done('a', 5, 1, counts={'/x': 1}, next_frame=True)  # a time before, not awaited
    barrier.done('a', 5, 2, counts={'/x': 1}, next_frame=True)  # the same, answered again
    assert barrier.take_carried() == ({'/x': 1}, {})


def test_next_frame_writers_of_one_topic_are_named():
    """Two next_frame participants on one topic: its messages cannot be told apart by frame."""
    barrier = _next_frame_barrier('a', 'b')
    barrier.done('a', 10, 1, counts={'/x': 1}, next_frame=True)
    barrier.done('b', 10, 2, counts={'/x': 0, '/y': 1}, next_frame=True)
    assert barrier.take_carried() == ({'/x': 1, '/y': 1}, {'/x': ('a', 'b')})


def test_nothing_is_carried_without_next_frame_participants():
    """Participants in rounds carry nothing."""
    assert _rounds_barrier('a').take_carried() is None


def test_a_reset_keeps_what_was_published_before_it_for_the_frame_said_next():
    """
    What next_frame participants published during the last frame before a reset was sent.

    It is said with the first frame after the reset (the reset's time), so that readers take
    it there and every later message of its topics at its own next frame, not one behind.
    """
    barrier = _next_frame_barrier('a')
    barrier.published(10, now_ns=1)
    barrier.done('a', 10, 2, counts={'/x': 1}, next_frame=True)
    barrier.reset()
    assert barrier.published(0, now_ns=3) == ['a']  # the reset's time, awaited
    assert barrier.take_carried() == ({'/x': 1}, {})
    barrier.done('a', 0, 4, counts={'/x': 1}, next_frame=True)
    assert barrier.clear
    assert barrier.take_carried() == ({'/x': 1}, {})
    assert barrier.take_carried() == ({'/x': 0}, {})  # taken once
