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
``simclock top``: where simulated time goes, live, from the server's frame timeline.

:func:`render_top` is pure: the server's status, the frame events of a recent window and the
server's steady time in, lines of plain text out. :class:`RecentEvents` keeps that window as
the server's ring is polled, and :func:`run_top` polls and draws: redrawn in place on a
terminal (``q`` or Ctrl-C ends it), one plain snapshot with ``--once``, and plain snapshots one
after another, a blank line between them, when the output is not a terminal (doc/timeline.md).
"""

import argparse
import os
import select
import shutil
import sys
import termios
import time
import tty
from typing import List
from typing import Optional
from typing import Sequence

from sim_clock.core.frame_events import DEFAULT_LENGTH
from sim_clock.core.frame_events import DONE
from sim_clock.core.frame_events import FRAME
from sim_clock.core.frame_events import FrameEvent
from sim_clock.core.frame_events import GATE
from sim_clock.core.frame_stats import Holder
from sim_clock.core.frame_stats import holders
from sim_clock.core.frame_stats import wall_ns
from sim_clock.core.units import format_seconds
from sim_clock.core.units import NS_PER_MS
from sim_clock.core.units import NS_PER_SEC
from sim_clock.core.units import seconds_text_to_ns
from sim_clock.wire.names import DEFAULT_SERVER

#: Seconds between refreshes, unless --interval says.
DEFAULT_INTERVAL_S = 0.5
#: The steady time the pace and the hold times are measured over, unless --window says: as
#: the option's text (argparse parses it as given) and in ns.
DEFAULT_WINDOW_S = '5'
DEFAULT_WINDOW_NS = 5 * NS_PER_SEC
#: The most events one poll asks for. A run that records more between two polls (a free run
#: as fast as possible) is sampled: the newest are taken, the older ones skipped, since only
#: the recent window is shown.
MAX_EVENTS_PER_POLL = 20_000
#: Columns of a snapshot that goes to no terminal (a pipe, a file), unless COLUMNS says.
PLAIN_WIDTH = 100
#: The narrowest name column: a longer name keeps its end (a node's or topic's last part).
MIN_NAME_WIDTH = 8
#: The table's columns after the name: heading, right-aligned.
COLUMNS = (('frames', True), ('p50 ms', True), ('p99 ms', True), ('max ms', True),
           ('share', True), ('kind', False))
#: The gap between two columns.
GAP = '  '

#: ANSI sequences of the terminal view: the alternate screen (the shell's screen comes back
#: as it was on exit, as with top and less), cursor hidden while drawing; cursor home, clear
#: to the end of the line and of the screen, so each refresh overwrites the last in place.
ENTER_SCREEN = '\x1b[?1049h\x1b[?25l'
LEAVE_SCREEN = '\x1b[?25h\x1b[?1049l'
HOME = '\x1b[H'
CLEAR_LINE = '\x1b[K'
CLEAR_BELOW = '\x1b[J'


def window_argument(text: str) -> int:
    """Parse the window's length: decimal seconds, more than 0, into integer ns exactly."""
    try:
        window_ns = seconds_text_to_ns(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if window_ns <= 0:
        raise argparse.ArgumentTypeError(f'expected seconds, more than 0, got {text!r}')
    return window_ns


# -- the view: pure ----------------------------------------------------------------------------

def render_top(status, events: Sequence[FrameEvent], now_ns: int, width: int, window_ns: int,
               *, capacity: int = DEFAULT_LENGTH, lost: int = 0,
               server: str = DEFAULT_SERVER) -> List[str]:
    """
    Return the lines of one view, each at most ``width`` characters.

    :param status: the server's :class:`~sim_clock.client.results.Status`, asked before the
        events (so the events are at least as new).
    :param events: the frame events kept, oldest first: those of the last ``window_ns`` before
        ``now_ns``, and the last FRAME event even if older (the frame still held).
    :param now_ns: the server's steady clock when it answered for the events.
    :param window_ns: the steady time the pace and the hold times are measured over.
    :param capacity: the server's ring length; 0: it records nothing (said, with the way to
        turn it on).
    :param lost: events that left the server's ring, or were skipped, since the last poll.
    :param server: the server's name, for the command that turns recording on.
    """
    lines = [_state_line(status)]
    if not capacity:
        lines += [holding_line(status, (), now_ns),
                  'the server records no frame events: its ring is off (parameter '
                  'frame_events is 0).',
                  f'turn it on: ros2 param set {server} frame_events {DEFAULT_LENGTH}',
                  f'        or: start the server with -p frame_events:={DEFAULT_LENGTH}']
        return [_clip(line, width) for line in lines]
    since_ns = now_ns - window_ns
    recent = [event for event in events if event.end_ns > since_ns]
    lines += [pace_line(status, recent, window_ns), holding_line(status, events, now_ns)]
    lines += _holder_table(recent, window_ns, width)
    if lost:
        lines += [f'{lost} events missed since the last refresh (the figures leave them out):',
                  f'the ring (frame_events {capacity}) turned over, or more than '
                  f'{MAX_EVENTS_PER_POLL} came']
    return [_clip(line, width) for line in lines]


def _state_line(status) -> str:
    """Return the frame, simulated time (every digit), epoch, mode, sync, holder and pause."""
    if status.mode == 'real_time':
        mode = 'real_time'
    else:
        mode = 'simulation, ' + ('sync on' if status.sync else 'free run')
    if status.sync and status.owner:
        mode += f' (held by {status.owner!r})'
    if status.paused:
        mode += ', paused'
    return (f'frame {status.frame}  time {format_seconds(status.time_ns)} s  epoch '
            f'{status.epoch}  {mode}')


def pace_line(status, recent: Sequence[FrameEvent], window_ns: int) -> str:
    """
    Return the real-time factor measured over the window's frames, and the one set.

    Simulated over steady time from the window's first frame to its last, within the last
    frame's epoch (a reset makes simulated time jump). So in sync mode it is the pace of the
    steps while they ran; idle time after the last frame does not count.
    """
    frames = [event for event in recent if event.kind == FRAME]
    if frames:
        frames = [event for event in frames if event.epoch == frames[-1].epoch]
    window = _seconds_text(window_ns)
    set_pace = ''
    if status.mode != 'real_time' and not status.sync:
        set_pace = ('; set: as fast as possible' if status.real_time_factor == 0
                    else f'; set: {status.real_time_factor:g}x')
    steady_ns = frames[-1].start_ns - frames[0].start_ns if frames else 0
    if len(frames) < 2 or steady_ns <= 0:
        return f'real-time factor: - (under 2 frames in the last {window} s){set_pace}'
    factor = (frames[-1].sim_ns - frames[0].sim_ns) / steady_ns
    return (f'real-time factor: {factor:.3f}x over the {len(frames)} frames of the last '
            f'{window} s{set_pace}')


def holding_line(status, events: Sequence[FrameEvent], now_ns: int) -> str:
    """
    Return who holds the current frame and since when.

    Who: the status's participants and gated topics waited for, less those whose done or
    message for the frame is among the events (they came between the two answers). Since
    when: the frame's FRAME event (same epoch and time as the status), up to ``now_ns``.
    """
    frame = next((event for event in reversed(events)
                  if event.kind == FRAME and event.epoch == status.epoch
                  and event.sim_ns == status.time_ns), None)
    finished = set()
    if frame is not None:
        finished = {(event.kind, event.name) for event in events
                    if event.kind in (DONE, GATE) and event.epoch == frame.epoch
                    and event.sim_ns == frame.sim_ns}
    waiting = [f'{name} (participant)' for name in status.waiting_for
               if (DONE, name) not in finished]
    waiting += [f'{topic} (gate)' for topic in status.output_gates_waiting
                if (GATE, topic) not in finished]
    if not waiting:
        since = '' if frame is None else (
            f' (it went out {_duration(now_ns - frame.start_ns)} ago)')
        return f'holding frame {status.frame}: nothing{since}'
    held = '' if frame is None else f' for {_duration(now_ns - frame.start_ns)}'
    return f'holding frame {status.frame}{held}: ' + ', '.join(waiting)


def _holder_table(recent: Sequence[FrameEvent], window_ns: int, width: int) -> List[str]:
    """Return each participant's and gate's holds over the window, slowest first, fitted."""
    found = holders(recent)
    title = f'holds in the last {_seconds_text(window_ns)} s, slowest first:'
    if not found:
        return [title, '  (no participant or output gate held a frame in that time)']
    wall = wall_ns(recent)
    rows = [_holder_cells(holder, wall) for holder in found]
    headings = [heading for heading, _ in COLUMNS]
    widths = [max(len(cells[k]) for cells in [headings] + rows) for k in range(len(COLUMNS))]
    # The name takes what the figures leave; the kind column goes first if the width is short
    # (it is last, so clipping drops it), then long names keep their last characters.
    figures = sum(widths[:-1]) + len(GAP) * (len(COLUMNS) - 1)
    natural = max(len('name'), max(len(holder.name) for holder in found))
    name_width = min(natural, max(MIN_NAME_WIDTH, width - len(GAP) - figures))
    lines = [title, _row('name', headings, name_width, widths)]
    lines += [_row(_fit_name(holder.name, name_width), cells, name_width, widths)
              for holder, cells in zip(found, rows)]
    return lines


def _holder_cells(holder: Holder, wall: int) -> List[str]:
    """Return a holder's cells after its name: frames, p50, p99, max (ms), share, kind."""
    kind = holder.kind + (f', {holder.missed} missed' if holder.missed else '')
    return [str(len(holder.holds_ns)), _ms(holder.p50_ns), _ms(holder.p99_ns),
            _ms(holder.max_ns), f'{holder.share(wall) * 100:.1f}%', kind]


def _row(name: str, cells: Sequence[str], name_width: int, widths: Sequence[int]) -> str:
    """Return one table line: the name left-aligned, then each cell as its column aligns."""
    parts = [name.ljust(name_width)]
    for cell, cell_width, (_, right) in zip(cells, widths, COLUMNS):
        parts.append(cell.rjust(cell_width) if right else cell.ljust(cell_width))
    return GAP.join(parts).rstrip()


def _fit_name(name: str, width: int) -> str:
    """Return ``name``, or '...' and its last characters if it is wider than ``width``."""
    return name if len(name) <= width else '...' + name[len(name) - width + 3:]


def _ms(ns: int) -> str:
    """Format ns as milliseconds with 3 decimals (display only)."""
    return f'{ns / NS_PER_MS:.3f}'


def _duration(ns: int) -> str:
    """Format a steady duration: ms under a second, else s (display only)."""
    if ns < NS_PER_SEC:
        return f'{ns / NS_PER_MS:.3f} ms'
    return f'{ns / NS_PER_SEC:.3f} s'


def _seconds_text(ns: int) -> str:
    """Format a window length as short exact seconds: 5, 0.5, 2.25."""
    return format_seconds(ns).rstrip('0').rstrip('.')


def _clip(line: str, width: int) -> str:
    """Return ``line`` cut to ``width`` characters (a line never wraps on the terminal)."""
    return line[:max(width, 1)].rstrip()


def fit_height(lines: List[str], rows: int) -> List[str]:
    """Return at most ``rows`` lines: the last one says how many did not fit, if any did not."""
    if len(lines) <= rows:
        return lines
    kept = max(rows - 1, 0)
    return lines[:kept] + [f'... {len(lines) - kept} more lines (a taller terminal shows them)']


# -- the window of events: pure ----------------------------------------------------------------

class RecentEvents:
    """
    The frame events of the last ``window_ns`` of the server's steady clock, as polled.

    Each answer of ``~/get_frame_events`` is added; what ended before the window is let go,
    except the last FRAME event (the frame a participant may still hold, for how long).
    """

    def __init__(self, window_ns: int):
        self.window_ns = window_ns
        self.events: List[FrameEvent] = []
        #: The sequence of the last event read: the next poll asks for those after it.
        self.last_sequence = 0
        #: The ring's length, the server's steady clock at its last answer (None: no answer).
        self.capacity: Optional[int] = None
        self.now_ns = 0
        #: Events of the last poll that were never read (left the ring first, or skipped).
        self.lost = 0

    def add(self, answer, skipped: int = 0) -> None:
        """
        Take one answer (a :class:`~sim_clock.client.results.FrameEvents`).

        ``skipped``: events after :attr:`last_sequence` that the poll chose not to read. The
        first answer's losses are not counted: they are the ring's history before this view.
        """
        first = self.capacity is None
        if answer.last_sequence < self.last_sequence:
            # Sequences never go back on one server: this is a new one (restarted).
            self.events, first = [], True
        self.capacity = answer.capacity
        self.now_ns = answer.now_ns
        self.lost = 0 if first else answer.dropped + skipped
        self.last_sequence = answer.last_sequence
        events = self.events + list(answer.events)
        since_ns = answer.now_ns - self.window_ns
        last_frame = next((event for event in reversed(events) if event.kind == FRAME), None)
        self.events = [event for event in events
                       if event.end_ns > since_ns or event is last_frame]

    def render(self, status, width: int, server: str = DEFAULT_SERVER) -> List[str]:
        """Return :func:`render_top`'s lines for ``status`` and the events kept."""
        return render_top(status, self.events, self.now_ns, width, self.window_ns,
                          capacity=self.capacity or 0, lost=self.lost, server=server)


def poll(client, recent: RecentEvents) -> None:
    """
    Read the events recorded since the last poll into ``recent``.

    At most :data:`MAX_EVENTS_PER_POLL` are read: when more are waiting, the newest are read
    and the older ones skipped (counted), since only the recent window is shown.
    """
    after = recent.last_sequence
    answer = client.frame_events(after=after, max_events=MAX_EVENTS_PER_POLL)
    if answer.last_sequence < after:
        after = 0  # a new server: read its ring from the start
        answer = client.frame_events(after=0, max_events=MAX_EVENTS_PER_POLL)
    newest_from = answer.last_sequence - MAX_EVENTS_PER_POLL
    more_waiting = bool(answer.events) and answer.events[-1].sequence < answer.last_sequence
    skipped = 0
    if more_waiting and newest_from > after:
        skipped = newest_from - after
        answer = client.frame_events(after=newest_from, max_events=MAX_EVENTS_PER_POLL)
    recent.add(answer, skipped)


def snapshot(client, recent: RecentEvents, width: int, server: str) -> List[str]:
    """Ask the status, then the events (so the events are at least as new); return the view."""
    status = client.status()
    poll(client, recent)
    return recent.render(status, width, server)


# -- the loop ----------------------------------------------------------------------------------

class Keys:
    """
    The keys typed on a terminal, one at a time (cbreak mode: no echo, no line editing).

    A context manager: the terminal's modes are taken on entry and put back on exit, whatever
    ends the view (q, Ctrl-C, an error). Not a terminal: no keys, waits are plain waits.
    """

    def __init__(self, stream):
        self._fd = stream.fileno() if stream is not None and stream.isatty() else None
        self._saved = None

    def __enter__(self) -> 'Keys':
        if self._fd is not None:
            self._saved = termios.tcgetattr(self._fd)
            # Ctrl-C still sends SIGINT (ISIG stays on); only echo and line buffering go.
            tty.setcbreak(self._fd)
        return self

    def __exit__(self, *exc) -> None:
        if self._saved is not None:
            termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)
            self._saved = None

    def quit_within(self, seconds: float) -> bool:
        """Wait ``seconds``; return True as soon as ``q`` is typed (or the terminal is gone)."""
        deadline = time.monotonic() + seconds
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if self._fd is None:
                select.select([], [], [], remaining)  # no keys to read: wait out the interval
                continue
            if not select.select([self._fd], [], [], remaining)[0]:
                return False
            try:
                typed = os.read(self._fd, 64)
            except OSError:
                return True  # the terminal hung up: nobody is left to look
            if not typed or b'q' in typed.lower():
                return True


def run_top(client, interval_s: float = DEFAULT_INTERVAL_S,
            window_ns: int = DEFAULT_WINDOW_NS, once: bool = False,
            server: str = DEFAULT_SERVER, out=sys.stdout, keys=sys.stdin) -> int:
    """
    Show the view until ``q`` or Ctrl-C (0), or once with ``once`` (0).

    On a terminal it is redrawn in place every ``interval_s`` s; to anything else it is
    written as plain text: once, or a snapshot per interval with a blank line between them.
    """
    from rclpy.executors import ExternalShutdownException
    recent = RecentEvents(window_ns)
    try:
        if once or not out.isatty():
            return _plain(client, recent, interval_s, once, server, out)
        with Keys(keys) as typed:
            return _terminal(client, recent, interval_s, server, out, typed)
    except (KeyboardInterrupt, ExternalShutdownException):
        return 0  # Ctrl-C: the view's end, as status --watch ends


def _plain(client, recent: RecentEvents, interval_s: float, once: bool, server: str,
           out) -> int:
    """Write plain snapshots (no escape codes): one, or one per interval until Ctrl-C."""
    first = True
    while True:
        width = shutil.get_terminal_size((PLAIN_WIDTH, 24)).columns
        lines = snapshot(client, recent, width, server)
        out.write(('' if first else '\n') + '\n'.join(lines) + '\n')
        out.flush()
        if once:
            return 0
        first = False
        time.sleep(interval_s)


def _terminal(client, recent: RecentEvents, interval_s: float, server: str, out,
              typed: Keys) -> int:
    """Redraw the view in place on the alternate screen until q; the screen restored after."""
    out.write(ENTER_SCREEN)
    try:
        while True:
            size = shutil.get_terminal_size()
            header = _clip(f'simclock top: {server}, every {interval_s:g} s; q quits',
                           size.columns)
            lines = fit_height([header, ''] + snapshot(client, recent, size.columns, server),
                               size.lines)
            out.write(HOME + '\n'.join(line + CLEAR_LINE for line in lines) + CLEAR_BELOW)
            out.flush()
            if typed.quit_within(interval_s):
                return 0
    finally:
        try:
            out.write(LEAVE_SCREEN)
            out.flush()
        except OSError:
            pass  # the terminal is gone: nothing to restore on it
