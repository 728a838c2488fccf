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

"""Replay progress by hand: a fake steady clock, a StringIO as the terminal; where it shows."""

import io
import re

from bags import batch_stream
from hypothesis import given
from hypothesis import strategies as st
import pytest
from sim_clock.bag.cursor import Cursor
from sim_clock.bag.progress import choose_output
from sim_clock.bag.progress import LINE_PERIOD_NS
from sim_clock.bag.progress import LOG_PERIOD_NS
from sim_clock.bag.progress import MIN_RATE_SPAN_NS
from sim_clock.bag.progress import Output
from sim_clock.bag.progress import Playback
from sim_clock.bag.progress import Progress
from sim_clock.bag.progress import RATE_WINDOW_NS
from sim_clock.bag.progress import Terminal
from sim_clock.bag.progress import UNKNOWN_TIME_LEFT
from sim_clock.bag.replay import python_run

pytestmark = pytest.mark.fast

S = 1_000_000_000
MS = 1_000_000
START = 1000 * S + 7
#: A bag of 100 s holding 2000 messages.
END = START + 100 * S
TOTAL = 2000
PLAYING, PAUSED, STEPPED = Playback.PLAYING, Playback.PAUSED, Playback.STEPPED


class Clock:
    """A steady clock moved by hand, in ns."""

    def __init__(self, now: int = 5 * S):
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ns: int) -> None:
        self.now += ns


@pytest.fixture
def clock():
    return Clock()


def _terminal_progress(clock, **kwargs):
    terminal = io.StringIO()
    return Progress(START, END, TOTAL, clock, stream=terminal, **kwargs), terminal


def _lines(terminal) -> list:
    """Return the lines drawn on the terminal, in order (each written as CR, text, CR)."""
    return [part.replace('\x1b[K', '') for part in terminal.getvalue().split('\r') if part]


def test_report_numbers_while_playing(clock):
    """Bag time, percent, messages out, rate and time left, exact where they are integers."""
    progress, _ = _terminal_progress(clock)
    # 2 s of wall time, 20 s of bag time played (rate 10), 400 messages out.
    for k in range(1, 21):
        clock.advance(100 * MS)
        progress.update(k * S, 20 * k, PLAYING)
    report = progress.report()
    assert (report.bag_time_ns, report.start_ns, report.end_ns) == (START + 20 * S, START, END)
    assert report.percent == pytest.approx(20.0)
    assert (report.messages_out, report.messages_total, report.epoch) == (400, TOTAL, 0)
    assert report.rate == pytest.approx(10.0)
    assert report.time_left == pytest.approx(8.0)  # 80 s of bag time at 10x
    assert report.playback is PLAYING


def test_the_line_shows_the_numbers(clock):
    """One line: bag time, percent, messages out of total, rate, time left."""
    progress, terminal = _terminal_progress(clock)
    for k in range(1, 21):
        clock.advance(100 * MS)
        progress.update(k * S, 20 * k, PLAYING)
    assert progress.report().line() == (
        'bag 1020.000 s  20.0%   400/2000 msgs   10.00x  left 8.0 s')
    # Drawn every 200 ms from the first update: the last at 1.9 s.
    assert _lines(terminal)[-1] == 'bag 1019.000 s  19.0%   380/2000 msgs   10.00x  left 8.1 s'
    assert '\n' not in terminal.getvalue()


def test_the_line_is_rewritten_in_place_at_most_five_times_a_second(clock):
    """Each draw starts at the line's start, erases a longer line's rest, rests at the start."""
    progress, terminal = _terminal_progress(clock)
    for k in range(1, 1001):  # 1 s of wall time, an update every millisecond
        clock.advance(MS)
        progress.update(k * MS, k, PLAYING)
    drawn = terminal.getvalue()
    assert drawn.count('\r') == 2 * 5  # the first update draws, then every 200 ms
    assert re.fullmatch(r'(\r[^\r\n]*\x1b\[K\r){5}', drawn)
    assert _lines(terminal)[0].startswith('bag 1000.001 s   0.0%     1/2000 msgs')


def test_no_rate_before_any_wall_time_nor_when_time_stands_still(clock):
    """No division by zero: nothing measured, nothing moved, a bag of one instant."""
    progress, terminal = _terminal_progress(clock)
    report = progress.report()
    assert (report.rate, report.time_left, report.percent) == (0.0, UNKNOWN_TIME_LEFT, 0.0)
    progress.update(0, 0, PLAYING)  # no wall time has passed
    assert progress.report().rate == 0.0
    clock.advance(MIN_RATE_SPAN_NS - 1)
    progress.update(S, 1, PLAYING)
    assert progress.report().rate == 0.0  # too short a span to tell
    clock.advance(1)
    assert progress.report().rate == pytest.approx(S / MIN_RATE_SPAN_NS)
    assert 'left --' in _lines(terminal)[0] and '--x' in _lines(terminal)[0]
    # Standing still for a whole window: rate 0, time left unknown.
    for _ in range(RATE_WINDOW_NS // (100 * MS) + 1):
        clock.advance(100 * MS)
        progress.update(S, 1, PLAYING)
    assert (progress.report().rate, progress.report().time_left) == (0.0, UNKNOWN_TIME_LEFT)
    instant = Progress(START, START, 1, clock, stream=io.StringIO())
    clock.advance(S)
    instant.update(0, 0, PLAYING)
    assert (instant.report().percent, instant.report().time_left) == (100.0, 0.0)


def test_the_rate_follows_the_last_window(clock):
    """A change of pace shows within the window; older samples are forgotten."""
    progress = Progress(START, END, TOTAL, clock)
    time_ns = 0
    for _ in range(50):  # 5 s at rate 1
        clock.advance(100 * MS)
        time_ns += 100 * MS
        progress.update(time_ns, 0, PLAYING)
    assert progress.report().rate == pytest.approx(1.0)
    for _ in range(30):  # 3 s at rate 4
        clock.advance(100 * MS)
        time_ns += 400 * MS
        progress.update(time_ns, 0, PLAYING)
    assert progress.report().rate == pytest.approx(4.0)
    assert len(progress._samples) <= RATE_WINDOW_NS // (100 * MS) + 2


def test_paused_time_left_is_unknown_and_the_line_says_paused(clock):
    """Paused: the line says so, rate 0 and time left unknown; on resume the rate is measured."""
    progress, terminal = _terminal_progress(clock)
    for k in range(1, 11):
        clock.advance(100 * MS)
        progress.update(k * 100 * MS, k, PLAYING)
    clock.advance(LINE_PERIOD_NS)
    progress.update(S, 10, PAUSED)
    report = progress.report()
    assert (report.rate, report.time_left) == (0.0, UNKNOWN_TIME_LEFT)
    assert _lines(terminal)[-1].endswith('--x  left --  (paused)')
    # Resumed after 1 s: the rate is measured from the resume on, not over the pause.
    for k in range(1, 11):
        clock.advance(100 * MS)
        progress.update(S, 10, PAUSED)
    for k in range(1, 6):
        clock.advance(100 * MS)
        progress.update(S + k * 400 * MS, 10 + k, PLAYING)
    assert progress.report().rate == pytest.approx(4.0)


def test_sync_mode_draws_no_line_but_reports(clock):
    """Stepped (sync mode): no line, the numbers still count."""
    progress, terminal = _terminal_progress(clock)
    for k in range(1, 11):
        clock.advance(LINE_PERIOD_NS)
        progress.update(k * 10 * MS, 3 * k, STEPPED)
    assert terminal.getvalue() == ''
    report = progress.report()
    assert (report.bag_time_ns, report.messages_out, report.playback) == (
        START + 100 * MS, 30, STEPPED)


def test_restart_counts_messages_from_the_reset(clock):
    """A reset (seek, loop, ~/reset): messages out from 0, the new time, the rate anew."""
    progress, _ = _terminal_progress(clock)
    for k in range(1, 11):
        clock.advance(100 * MS)
        progress.update(k * S, 100 * k, PLAYING)
    progress.restart(50 * S, 1000, 1)
    report = progress.report()
    assert (report.bag_time_ns, report.messages_out, report.epoch, report.rate) == (
        START + 50 * S, 0, 1, 0.0)
    clock.advance(200 * MS)
    progress.update(51 * S, 1007, PLAYING)
    report = progress.report()
    assert (report.messages_out, report.rate) == (7, pytest.approx(5.0))
    assert report.time_left == pytest.approx(49 / 5.0)


def test_past_the_end(clock):
    """Sync mode steps on past the end: 100 %, no time left."""
    progress = Progress(START, END, TOTAL, clock)
    clock.advance(S)
    progress.update(END - START + 5 * S, TOTAL, STEPPED)
    report = progress.report()
    assert (report.percent, report.time_left, report.bag_time_ns) == (100.0, 0.0, END + 5 * S)
    assert report.line().endswith('(end)')


def test_log_at_most_every_five_seconds_while_playing_without_a_terminal(clock):
    """Not the user's terminal: the line in the log, throttled on the steady clock; playing."""
    logged = []
    progress = Progress(START, END, TOTAL, clock, log=logged.append)
    for k in range(1, 121):  # 12 s of playing, updates every 100 ms
        clock.advance(100 * MS)
        progress.update(k * 100 * MS, k, PLAYING)
    assert len(logged) == 12 * S // LOG_PERIOD_NS == 2  # at 5 s and at 10 s
    assert logged[0] == progress_line_at(50)
    for k in range(121, 300):  # paused: nothing logged
        clock.advance(100 * MS)
        progress.update(12 * S, 120, PAUSED)
    assert len(logged) == 2


def progress_line_at(tenths: int) -> str:
    """Return the line of a replay at rate 1 after ``tenths`` tenths of a second."""
    seconds = tenths / 10
    return (f'bag {1000 + seconds:.3f} s {seconds:5.1f}%  {tenths:>4}/2000 msgs    1.00x  '
            f'left {_left(100 - seconds)}')


def _left(seconds: float) -> str:
    minutes, sec = divmod(int(seconds), 60)
    return f'{seconds:.1f} s' if seconds < 60 else f'0:{minutes:02d}:{sec:02d}'


def test_nothing_shown_without_a_stream_or_a_log(clock):
    """--no-progress: neither line nor log; the numbers still count."""
    progress = Progress(START, END, TOTAL, clock)
    for k in range(1, 101):
        clock.advance(S)
        progress.update(k * S // 2, k, PLAYING)
    assert progress.report().messages_out == 100


def test_a_terminal_given_takes_the_line_and_the_log_stays_unused(clock):
    """Given a terminal and a log, only the terminal: the line once, no log line."""
    logged = []
    terminal = io.StringIO()
    progress = Progress(START, END, TOTAL, clock, stream=terminal, log=logged.append)
    for k in range(1, 101):
        clock.advance(S)
        progress.update(k * S // 2, k, PLAYING)
    assert logged == [] and len(_lines(terminal)) == 100


def test_end_line_and_close_leave_the_line_above(clock):
    """At the end the line is drawn once more and left; closing moves below an open line."""
    progress, terminal = _terminal_progress(clock)
    progress.update(S, 1, PLAYING)
    clock.advance(MS)
    progress.update(100 * S, TOTAL, PLAYING)
    progress.end_line()
    assert terminal.getvalue().endswith('(end)\x1b[K\r\n')
    progress.close()  # nothing open: nothing written
    assert terminal.getvalue().endswith('\r\n')
    clock.advance(LINE_PERIOD_NS)
    progress.update(100 * S, TOTAL, PAUSED)
    progress.close()
    assert terminal.getvalue().endswith('(end)\x1b[K\r\n')
    assert terminal.getvalue().count('\n') == 2


def test_a_terminal_that_went_away_stops_the_line(clock):
    """A write that fails (hung-up terminal) ends the line; nothing raises."""
    class Gone(io.StringIO):

        def write(self, text):
            raise OSError(5, 'Input/output error')
    progress = Progress(START, END, TOTAL, clock, stream=Gone())
    progress.update(S, 1, PLAYING)
    clock.advance(LINE_PERIOD_NS)
    progress.update(2 * S, 2, PLAYING)
    progress.close()
    assert progress.report().messages_out == 2


def test_long_time_left_in_hours(clock):
    """Time left over a minute: h:mm:ss."""
    progress = Progress(START, START + 10_000 * S, TOTAL, clock)
    clock.advance(S)
    progress.update(S, 0, PLAYING)
    assert progress.report().line().endswith('left 2:46:39')


# -- where progress shows: the user's terminal, else the log ------------------------------------

@pytest.mark.parametrize('show, terminal, output', [
    # The terminal a user started the player in, in the foreground: the line.
    (True, Terminal(tty=True, foreground_group=41, group=41), Output.LINE),
    # ros2 launch's pseudo-terminal (emulate_tty): a terminal, not the controlling one.
    (True, Terminal(tty=True, foreground_group=None, group=41), Output.LOG),
    # The user's terminal, the player a job in the background (`bag_player bag &`).
    (True, Terminal(tty=True, foreground_group=7, group=41), Output.LOG),
    # A file or a pipe (ros2 launch without emulate_tty, `2>&1 | tee`).
    (True, Terminal(tty=False, foreground_group=None, group=41), Output.LOG),
    # --no-progress, wherever the output goes.
    (False, Terminal(tty=True, foreground_group=41, group=41), Output.NONE),
    (False, Terminal(tty=False, foreground_group=None, group=41), Output.NONE),
])
def test_the_line_only_on_the_users_terminal_in_the_foreground(show, terminal, output):
    """The line on the controlling terminal of a foreground job; the log elsewhere; or none."""
    assert choose_output(show, terminal) is output


# -- messages counted where the cursor hands them out -------------------------------------------

@given(times=st.lists(st.integers(0, 1000), max_size=40).map(sorted),
       cuts=st.lists(st.integers(-5, 1005), max_size=15).map(sorted),
       sizes=st.lists(st.integers(0, 5), min_size=1, max_size=4).filter(any),
       seek=st.integers(0, 1000))
def test_cursor_counts_exactly_what_it_hands_out(times, cuts, sizes, seek):
    """handed_out grows by each message handed out, however frames and batches fall; seeks too."""
    out = []
    run = python_run(lambda batch, start, stop: out.extend(batch[0][start:stop]), lambda t: None)
    cursor = Cursor(batch_stream(times, sizes), 0)
    for cut in cuts:
        cursor.play([cut], 0, run)
        assert cursor.handed_out == len(out) == sum(t <= cut for t in times)
    cursor.seek(seek)
    before = cursor.handed_out
    cursor.play([seek + 10, 2000], 0, run)
    assert cursor.handed_out - before == sum(t >= seek for t in times)
    assert cursor.handed_out == len(out)
