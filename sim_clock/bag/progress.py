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
Replay progress: where a bag's replay is, as numbers, one updating terminal line or a log line.

As rosbag2's player progress bar, a unit of its own, handed its output stream and rate-limited
on an injected steady clock (``now_fn``, integer ns); no rclpy. The bag player's frame sink
feeds it (:meth:`Progress.update` after each run of frames and each idle republish,
:meth:`Progress.restart` at each reset); ``~/get_progress`` answers :meth:`Progress.report`.
Where it shows is :func:`choose_output`'s decision on what :func:`probe_terminal` found.
"""

from collections import deque
from dataclasses import dataclass
import enum
import os
from typing import Callable
from typing import Optional
from typing import TextIO

from sim_clock.core.units import NS_PER_SEC
from sim_clock.wire.progress_report import Playback
from sim_clock.wire.progress_report import ProgressReport
from sim_clock.wire.progress_report import UNKNOWN_TIME_LEFT

#: The terminal line is rewritten at most this often (five times a second).
LINE_PERIOD_NS = NS_PER_SEC // 5
#: Without a terminal, a progress line goes to the log at most this often, while playing.
LOG_PERIOD_NS = 5 * NS_PER_SEC
#: The rate is the pace of bag time over about the last this much wall time ...
RATE_WINDOW_NS = 2 * NS_PER_SEC
#: ... from samples of (wall time, bag time) taken at least this far apart ...
SAMPLE_PERIOD_NS = NS_PER_SEC // 10
#: ... and is unknown (0) until this much wall time was measured since the start, a reset or
#: a resume.
MIN_RATE_SPAN_NS = NS_PER_SEC // 10
#: What rewrites the line in place: back to its start; erase what a longer line left after it.
LINE_START = '\r'
ERASE_TO_END = '\x1b[K'


class Output(enum.Enum):
    """Where the progress shows."""

    #: One line rewritten in place (``\r``): the user's terminal.
    LINE = 'line'
    #: A full log line at most every LOG_PERIOD_NS while playing: a file, a pipe, a terminal
    #: that is not the user's (``ros2 launch``'s pseudo-terminal), a job in the background.
    LOG = 'log'
    #: Nowhere (``--no-progress``); ``~/get_progress`` answers all the same.
    NONE = 'none'


@dataclass(frozen=True)
class Terminal:
    """What the system says of the stream progress would be written to."""

    #: The stream is a terminal device (``isatty``), pseudo-terminals included.
    tty: bool
    #: The process group in the foreground of the stream's terminal, if that terminal is the
    #: process's controlling terminal; None if it is not, or the stream is no terminal.
    foreground_group: Optional[int]
    #: The process's own group.
    group: int


def choose_output(show: bool, terminal: Terminal) -> Output:
    r"""
    Return where progress goes: the line only on the user's terminal, in the foreground.

    ``ros2 launch`` with ``emulate_tty`` gives each process a pseudo-terminal of its own
    (osrf_pycommon opens it and hands its end to the process as stdout and stderr) and shows
    the output line by line: a ``\r`` line would be held until the next full line. That
    pseudo-terminal is never the process's controlling terminal (the process stays in
    launch's session), while the terminal a user started the player in is; a process in the
    background of its terminal would write over the shell's prompt.
    """
    if not show:
        return Output.NONE
    if terminal.tty and terminal.foreground_group == terminal.group:
        return Output.LINE
    return Output.LOG


def probe_terminal(stream: TextIO) -> Terminal:
    """Return what :func:`choose_output` needs to know of ``stream``, asked of the system."""
    group = os.getpgrp()
    try:
        fd = stream.fileno()
        tty = os.isatty(fd)
    except (AttributeError, OSError, ValueError):  # no descriptor, or a closed one
        return Terminal(False, None, group)
    foreground = None
    if tty:
        try:
            foreground = os.tcgetpgrp(fd)
        except OSError:  # ENOTTY: a terminal, but not this process's controlling terminal
            pass
    return Terminal(tty, foreground, group)


class Progress:
    """
    Count and show where a replay is; rate-limited on the steady clock ``now_fn`` (ns).

    ``stream`` (the user's terminal, :attr:`Output.LINE`): one line rewritten in place at most
    every :data:`LINE_PERIOD_NS` in free run and real-time mode (playing or paused), not in sync
    mode. ``log`` (:attr:`Output.LOG`): ``log(line)`` at most every :data:`LOG_PERIOD_NS` while
    playing. Give one of them, or neither: numbers only (:meth:`report`).

    Times given to :meth:`update` and :meth:`restart` are the timeline's: ns from the bag's
    first timestamp ``start_ns``. Messages are counted by the cursor (``handed_out``, since
    it was made); what went out since the last reset is the difference.
    """

    def __init__(self, start_ns: int, end_ns: int, messages_total: int,
                 now_fn: Callable[[], int], *, stream: Optional[TextIO] = None,
                 log: Optional[Callable[[str], object]] = None):
        self._start_ns = start_ns
        self._duration_ns = max(end_ns - start_ns, 0)
        self._total = messages_total
        self._now = now_fn
        self._terminal = stream
        self._log = log if stream is None else None
        self._time_ns = self._handed_out = self._base = self._epoch = 0
        self._playback = Playback.PAUSED
        now = self._updated_ns = now_fn()
        #: (steady ns, time ns), oldest first: the first one is the newest at least
        #: RATE_WINDOW_NS old, where there is one.
        self._samples = deque([(now, 0)])
        self._last_line_ns = None
        self._last_log_ns = now
        self._line_open = False  # a line is on the terminal, the cursor at its start
        #: (messages in the bag, messages left out, why): the report's last three fields.
        self.bag_counts = (0, 0, '')

    def restart(self, time_ns: int, handed_out: int, epoch: int) -> None:
        """Start again at ``time_ns`` (a reset): messages out from 0, the rate measured anew."""
        self._time_ns, self._base, self._handed_out, self._epoch = (
            time_ns, handed_out, handed_out, epoch)
        self._updated_ns = self._now()
        self._samples = deque([(self._updated_ns, time_ns)])

    def update(self, time_ns: int, handed_out: int, playback: Playback) -> None:
        """Note where the replay is; rewrite the line or log it when it is due."""
        now = self._now()
        if playback is Playback.PLAYING and self._playback is not Playback.PLAYING:
            # Measured from the resume on: the time it stood still is not the pace of playing.
            self._samples = deque([(self._updated_ns, self._time_ns)])
        self._time_ns, self._handed_out, self._playback = time_ns, handed_out, playback
        self._updated_ns = now
        samples = self._samples
        if now - samples[-1][0] >= SAMPLE_PERIOD_NS:
            samples.append((now, time_ns))
            self._trim(now)
        if self._terminal is not None:
            if playback is not Playback.STEPPED and (
                    self._last_line_ns is None or now - self._last_line_ns >= LINE_PERIOD_NS):
                self._draw(now)
        elif (self._log is not None and playback is Playback.PLAYING
                and now - self._last_log_ns >= LOG_PERIOD_NS):
            self._last_log_ns = now
            self._log(self.report(now).line())

    def report(self, now: Optional[int] = None) -> ProgressReport:
        """Return where the replay is now."""
        now = self._now() if now is None else now
        duration, time_ns = self._duration_ns, self._time_ns
        percent = 100.0 if duration == 0 else min(max(time_ns * 100 / duration, 0.0), 100.0)
        # Paused, time stands still: the pace now is 0, whatever the last seconds were.
        rate = 0.0 if self._playback is Playback.PAUSED else self._rate(now)
        if time_ns >= duration:
            time_left = 0.0
        elif rate > 0:
            time_left = (duration - time_ns) / NS_PER_SEC / rate
        else:
            time_left = UNKNOWN_TIME_LEFT
        return ProgressReport(
            self._start_ns + time_ns, self._start_ns, self._start_ns + duration, percent,
            self._handed_out - self._base, self._total, rate, time_left, self._epoch,
            self._playback, *self.bag_counts)

    def end_line(self) -> None:
        """Show the line as it is now and move below it, so that what is printed next stays."""
        if self._terminal is not None and self._line_open:
            self._draw(self._now())
            self._write('\n')
            self._line_open = False

    def close(self) -> None:
        """Leave the terminal on a new line below the progress line."""
        if self._terminal is not None and self._line_open:
            self._write('\n')
            self._line_open = False

    def _rate(self, now: int) -> float:
        """Return bag seconds per wall second over about the last RATE_WINDOW_NS; 0 unknown."""
        self._trim(now)
        steady_ns, time_ns = self._samples[0]
        span = now - steady_ns
        if span < MIN_RATE_SPAN_NS:
            return 0.0
        return (self._time_ns - time_ns) / span

    def _trim(self, now: int) -> None:
        samples = self._samples
        while len(samples) > 1 and now - samples[1][0] >= RATE_WINDOW_NS:
            samples.popleft()

    def _draw(self, now: int) -> None:
        self._last_line_ns = now
        # The cursor rests at the line's start: a log line printed meanwhile overwrites it
        # rather than being appended to it.
        self._write(f'{LINE_START}{self.report(now).line()}{ERASE_TO_END}{LINE_START}')
        self._line_open = True

    def _write(self, text: str) -> None:
        try:
            self._terminal.write(text)
            self._terminal.flush()
        except (OSError, ValueError):
            self._terminal = None  # the terminal went away (closed, hung up): no more lines
