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
``simclock top``'s view, drawn from frame events recorded here (sim_clock.client.top).

The events are recorded with the server's own ring, by hand: steady times and holds are
exact, so each figure of the view is known to the digit. The live view against a real server
and its participants: test/client/test_top_as_installed.py.
"""

import dataclasses

import pytest
from sim_clock.client.results import FrameEvents
from sim_clock.client.results import Status
from sim_clock.client.top import fit_height
from sim_clock.client.top import MAX_EVENTS_PER_POLL
from sim_clock.client.top import poll
from sim_clock.client.top import RecentEvents
from sim_clock.client.top import render_top
from sim_clock.core.frame_events import DONE
from sim_clock.core.frame_events import FRAME
from sim_clock.core.frame_events import FrameEventRing
from sim_clock.core.frame_events import GATE
from sim_clock.core.frame_events import RESET

pytestmark = pytest.mark.fast

MS = 1_000_000
SEC = 1_000_000_000
#: Where the server's steady clock stood when the runs below began.
BASE = 1000 * SEC
WINDOW = 5 * SEC


def _status(frame: int, time_ns: int, **changes) -> Status:
    """Return a sync-mode status at ``frame`` and ``time_ns``, with ``changes``."""
    status = Status(mode='simulation', sync=True, paused=False, frame=frame, time_ns=time_ns,
                    epoch=0, owner='', real_time_factor=1.0, time_step_ns=10 * MS,
                    publish_rate=100.0)
    return dataclasses.replace(status, **changes)


def _run(ring: FrameEventRing, frames: int, first: int = 1, epoch: int = 0, out0: int = BASE):
    """
    Record frames ``first``.. of 10 ms, one every 30 ms of steady time from ``out0``.

    'planning' holds 20 ms at frames 9, 19, ... and 0.5 ms at the others; 'perception' 1 ms;
    the gate '/cmd' 0.25 ms. Return the steady time the last frame went out.
    """
    out = out0
    for k in range(first, first + frames):
        out = out0 + (k - first) * 30 * MS
        ring.record(FRAME, epoch, k * 10 * MS, out, count=k)
        ring.record(DONE, epoch, k * 10 * MS, out, out + MS, name='perception')
        ring.record(GATE, epoch, k * 10 * MS, out, out + MS // 4, name='/cmd')
        hold = 20 * MS if k % 10 == 9 else MS // 2
        ring.record(DONE, epoch, k * 10 * MS, out, out + hold, name='planning')
    return out


def _twenty_frames():
    """Return (events, the steady time frame 20 went out) of a run of frames 1 to 20."""
    ring = FrameEventRing(1000)
    last_out = _run(ring, 20)
    return ring.after(0)[0], last_out


def test_a_finished_frame_the_pace_and_the_holders_slowest_first():
    """
    Twenty frames of 10 ms, one every 30 ms: every figure to the digit.

    Pace: 190 ms of simulated time over the 570 ms between the first frame and the last.
    planning: 2 holds of 20 ms (frames 9 and 19) and 18 of 0.5 ms: p99 and max 20 ms, first;
    its share is its 49 ms of holds over the 571 ms the events span.
    """
    events, last_out = _twenty_frames()
    lines = render_top(_status(20, 200 * MS), events, last_out + 40 * MS, 100, WINDOW)
    assert lines == [
        'frame 20  time 0.200000000 s  epoch 0  simulation, sync on',
        'real-time factor: 0.333x over the 20 frames of the last 5 s',
        'holding frame 20: nothing (it went out 40.000 ms ago)',
        'holds in the last 5 s, slowest first:',
        'name        frames  p50 ms  p99 ms  max ms  share  kind',
        'planning        20   0.500  20.000  20.000   8.6%  participant',
        'perception      20   1.000   1.000   1.000   3.5%  participant',
        '/cmd            20   0.250   0.250   0.250   0.9%  gate',
    ]


def test_the_frame_held_names_who_holds_it_and_for_how_long():
    """
    Frame 21 out 12.5 ms ago: the status waits for planning, perception and /cmd.

    perception's done for frame 21 is among the events (it came after the status was asked):
    it no longer holds the frame. The others are named, participants first.
    """
    ring = FrameEventRing(1000)
    out = _run(ring, 20) + 30 * MS
    ring.record(FRAME, 0, 210 * MS, out, count=21)
    ring.record(DONE, 0, 210 * MS, out, out + MS, name='perception')
    status = _status(21, 210 * MS, waiting_for=('planning', 'perception'),
                     output_gates_waiting=('/cmd',), owner='rl_loop')
    lines = render_top(status, ring.after(0)[0], out + 12 * MS + MS // 2, 100, WINDOW)
    assert lines[0] == ('frame 21  time 0.210000000 s  epoch 0  simulation, sync on (held by '
                        "'rl_loop')")
    assert lines[2] == 'holding frame 21 for 12.500 ms: planning (participant), /cmd (gate)'


def test_a_holder_is_named_without_a_time_when_its_frame_is_not_among_the_events():
    """No FRAME event for the status's frame (real-time mode has none): who, not how long."""
    status = _status(3, 30 * MS, waiting_for=('planning',), mode='real_time', sync=False,
                     paused=True)
    lines = render_top(status, (), BASE, 100, WINDOW)
    assert lines[:3] == [
        'frame 3  time 0.030000000 s  epoch 0  real_time, paused',
        'real-time factor: - (under 2 frames in the last 5 s)',
        'holding frame 3: planning (participant)',
    ]


def test_only_the_window_counts_and_the_pace_restarts_at_a_reset():
    """
    Frames 1 to 20, a reset 10 s later, then frames 1 to 5 at twice the pace; a 1 s window.

    The first run has left the window: the table counts the second only, and the pace is
    measured within the last epoch: 40 ms of simulated time over 60 ms of steady time.
    perception's share: its 10 ms of holds over the 77 ms from the reset to its last done.
    Free run with a factor set: the set pace is said beside the measured one.
    """
    ring = FrameEventRing(1000)
    _run(ring, 20)
    reset_at = BASE + 10 * SEC
    ring.record(RESET, 1, 0, reset_at, count=200 * MS, detail='reset')
    for k in range(1, 6):
        out = reset_at + k * 15 * MS
        ring.record(FRAME, 1, k * 10 * MS, out, count=k)
        ring.record(DONE, 1, k * 10 * MS, out, out + 2 * MS, name='perception')
    status = _status(5, 50 * MS, epoch=1, sync=False, real_time_factor=2.0)
    lines = render_top(status, ring.after(0)[0], reset_at + 100 * MS, 100, SEC)
    assert lines == [
        'frame 5  time 0.050000000 s  epoch 1  simulation, free run',
        'real-time factor: 0.667x over the 5 frames of the last 1 s; set: 2x',
        'holding frame 5: nothing (it went out 25.000 ms ago)',
        'holds in the last 1 s, slowest first:',
        'name        frames  p50 ms  p99 ms  max ms  share  kind',
        'perception       5   2.000   2.000   2.000  13.0%  participant',
    ]


def test_a_missed_hold_is_counted_beside_its_kind():
    """A done that never came (success false) still holds the frame until it timed out."""
    ring = FrameEventRing(100)
    ring.record(FRAME, 0, 10 * MS, BASE, count=1)
    ring.record(DONE, 0, 10 * MS, BASE, BASE + 100 * MS, name='stuck', success=False)
    lines = render_top(_status(1, 10 * MS, real_time_factor=0.0, sync=False),
                       ring.after(0)[0], BASE + 200 * MS, 100, WINDOW)
    assert lines[1] == 'real-time factor: - (under 2 frames in the last 5 s); set: as fast ' \
                       'as possible'
    assert lines[-2:] == [
        'name   frames   p50 ms   p99 ms   max ms   share  kind',
        'stuck       1  100.000  100.000  100.000  100.0%  participant, 1 missed']


@pytest.mark.parametrize('width', [80, 60, 50, 40, 20])
def test_narrow_views_keep_the_order_and_fit_the_width(width):
    """
    Every line fits; the kind column goes first, then names keep their last characters.

    At 60 columns the table is whole but for part of the kind; at 50 the kind is gone and
    the name column is 9 wide ('perception' keeps 'eption'); narrower, the names keep their
    last 5 characters and lines are cut at the width.
    """
    events, last_out = _twenty_frames()
    lines = render_top(_status(20, 200 * MS), events, last_out + 40 * MS, width, WINDOW)
    assert all(len(line) <= width for line in lines), lines
    names = [row.split()[0] for row in lines[5:]]
    assert names == {80: ['planning', 'perception', '/cmd'],
                     60: ['planning', 'perception', '/cmd'],
                     50: ['planning', '...eption', '/cmd']}.get(
                         width, ['planning', '...ption', '/cmd'])
    if width == 50:
        assert lines[5:] == ['planning       20   0.500  20.000  20.000   8.6%',
                             '...eption      20   1.000   1.000   1.000   3.5%',
                             '/cmd           20   0.250   0.250   0.250   0.9%']
    if width == 60:
        assert lines[5] == 'planning        20   0.500  20.000  20.000   8.6%  participa'


def test_no_holder_in_the_window_is_said():
    """Frames that nobody held (no participant, no gate): the pace, and a line that says so."""
    ring = FrameEventRing(100)
    for k in range(1, 4):
        ring.record(FRAME, 0, k * 10 * MS, BASE + k * 10 * MS, count=k)
    lines = render_top(_status(3, 30 * MS), ring.after(0)[0], BASE + 30 * MS, 100, WINDOW)
    assert lines[1:] == [
        'real-time factor: 1.000x over the 3 frames of the last 5 s',
        'holding frame 3: nothing (it went out 0.000 ms ago)',
        'holds in the last 5 s, slowest first:',
        '  (no participant or output gate held a frame in that time)',
    ]


def test_a_ring_that_is_off_is_said_with_the_way_to_turn_it_on():
    """Capacity 0: the state and who holds, then what to set; nothing measured."""
    status = _status(7, 70 * MS, waiting_for=('planning',))
    lines = render_top(status, (), BASE, 200, WINDOW, capacity=0, server='/sim/clock')
    assert lines == [
        'frame 7  time 0.070000000 s  epoch 0  simulation, sync on',
        'holding frame 7: planning (participant)',
        'the server records no frame events: its ring is off (parameter frame_events is 0).',
        'turn it on: ros2 param set /sim/clock frame_events 10000',
        '        or: start the server with -p frame_events:=10000',
    ]


def test_lost_events_are_said():
    """Events that left the ring between two refreshes are counted under the table."""
    events, last_out = _twenty_frames()
    lines = render_top(_status(20, 200 * MS), events, last_out, 80, WINDOW, capacity=50,
                       lost=12)
    assert lines[-2:] == [
        '12 events missed since the last refresh (the figures leave them out):',
        f'the ring (frame_events 50) turned over, or more than {MAX_EVENTS_PER_POLL} came']


def test_fit_height_says_what_did_not_fit():
    """Lines beyond the terminal's height are counted on its last line."""
    assert fit_height(['a', 'b'], 2) == ['a', 'b']
    assert fit_height(['a', 'b', 'c', 'd'], 3) == [
        'a', 'b', '... 2 more lines (a taller terminal shows them)']


class _RingServer:
    """What top asks of a server, answered from a ring with a steady clock set by hand."""

    def __init__(self, ring: FrameEventRing):
        self.ring = ring
        self.now_ns = BASE
        self.asked = []

    def frame_events(self, after: int = 0, max_events: int = 0) -> FrameEvents:
        self.asked.append((after, max_events))
        events, dropped = self.ring.after(after, max_events)
        return FrameEvents(tuple(events), dropped, self.ring.last_sequence, self.ring.length,
                           self.now_ns)


def test_the_window_lets_old_events_go_but_keeps_the_last_frame():
    """
    A frame held for 10 s: its FRAME event stays, the events before it go with the window.

    The first answer's dropped events are the ring's history, not a loss; a later one's are.
    """
    ring = FrameEventRing(1000)
    last_out = _run(ring, 20)
    server = _RingServer(ring)
    server.now_ns = last_out + 10 * SEC
    recent = RecentEvents(WINDOW)
    poll(server, recent)
    assert [(e.kind, e.count) for e in recent.events] == [(FRAME, 20)]
    assert (recent.last_sequence, recent.lost, server.asked) == (
        80, 0, [(0, MAX_EVENTS_PER_POLL)])
    lines = recent.render(_status(20, 200 * MS, waiting_for=('planning',)), 100)
    assert lines[2] == 'holding frame 20 for 10.000 s: planning (participant)'
    # 40 more events in a ring of 20 before the next poll: 20 left it unread. The frame held
    # is not the last any more: it goes with the window, the 20 events read stay.
    small = FrameEventRing(20)
    small.last_sequence = 80
    server.ring = small
    _run(small, 10, first=21, out0=server.now_ns)
    poll(server, recent)
    assert (recent.lost, recent.last_sequence) == (20, 120)
    assert [event.sequence for event in recent.events] == list(range(101, 121))


def test_a_poll_with_more_waiting_than_it_reads_skips_to_the_newest():
    """More events than one poll reads: the newest are read, the others counted as skipped."""
    ring = FrameEventRing(3 * MAX_EVENTS_PER_POLL)
    server = _RingServer(ring)
    recent = RecentEvents(WINDOW)
    poll(server, recent)
    for k in range(MAX_EVENTS_PER_POLL + 500):
        ring.record(FRAME, 0, k * MS, BASE + k, count=k)
    server.now_ns = BASE + MAX_EVENTS_PER_POLL + 500
    poll(server, recent)
    assert server.asked[1:] == [(0, MAX_EVENTS_PER_POLL), (500, MAX_EVENTS_PER_POLL)]
    assert recent.lost == 500
    assert [recent.events[0].sequence, recent.events[-1].sequence] == [
        501, MAX_EVENTS_PER_POLL + 500]


def test_a_restarted_server_is_read_from_its_start():
    """Sequences that went back: a new server; its events replace the old, and none is lost."""
    ring = FrameEventRing(1000)
    _run(ring, 20)
    server = _RingServer(ring)
    recent = RecentEvents(WINDOW)
    poll(server, recent)
    server.ring = FrameEventRing(1000)
    _run(server.ring, 2)
    poll(server, recent)
    assert server.asked[1:] == [(80, MAX_EVENTS_PER_POLL), (0, MAX_EVENTS_PER_POLL)]
    assert (recent.last_sequence, recent.lost, len(recent.events)) == (8, 0, 8)
