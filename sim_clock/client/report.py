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
The frame timeline as one HTML page: where the wall time of a run went.

Free of rclpy. :func:`render_report` writes a self-contained page (inline CSS and SVG, no
script, nothing fetched): a summary, the slowest frames with each holder's span, the
participants and gates slowest first, the real-time factor over the run, and the resets.
:func:`report_command` is ``simclock report``: it reads a trace file written by ``simclock
trace`` and prints the holders as text. (doc/timeline.md)
"""

from collections import defaultdict
from dataclasses import dataclass
import html
import os
import sys
from typing import Dict
from typing import List
from typing import Optional
from typing import Sequence
from typing import Tuple

from sim_clock.client.frame_trace import read_trace
from sim_clock.client.frame_trace import TraceError
from sim_clock.core.frame_events import ACK
from sim_clock.core.frame_events import DONE
from sim_clock.core.frame_events import FRAME
from sim_clock.core.frame_events import FrameEvent
from sim_clock.core.frame_events import GATE
from sim_clock.core.frame_events import RESET
from sim_clock.core.frame_events import STEP
from sim_clock.core.frame_stats import FrameSpan
from sim_clock.core.frame_stats import Holder
from sim_clock.core.frame_stats import holders
from sim_clock.core.frame_stats import real_time_factor
from sim_clock.core.frame_stats import slowest_frames
from sim_clock.core.frame_stats import wall_ns
from sim_clock.core.units import format_seconds
from sim_clock.core.units import NS_PER_MS
from sim_clock.core.units import NS_PER_SEC

#: A holder's event kind, by its kind (frame_stats.HOLDER_KINDS the other way round).
HOLDER_KINDS = {'participant': DONE, 'gate': GATE}
#: How many of the slowest frames the timeline draws.
SLOWEST_FRAMES = 20
#: The real-time factor plot: at most about this many windows, each at least this long.
PLOT_POINTS = 100
MIN_WINDOW_NS = NS_PER_MS
#: ``simclock report`` exit codes, as the command line's: done; a file that cannot be read or
#: written.
EXIT_DONE, EXIT_UNREADABLE = 0, 2
#: Holders' colours, slowest first (then again): distinct on screen and in print.
PALETTE = ('#d62728', '#1f77b4', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2',
           '#17becf', '#bcbd22', '#7f7f7f')
ACK_COLOUR = '#999999'
#: The page's own style: nothing is loaded from elsewhere.
STYLE = """
body { font-family: sans-serif; margin: 24px; color: #222; background: #fff; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; }
table { border-collapse: collapse; }
th, td { padding: 3px 10px; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child, td:first-child, td.kind { text-align: left; }
dl#summary { display: grid; grid-template-columns: max-content auto; gap: 3px 16px; }
dl#summary dt { font-weight: bold; } dl#summary dd { margin: 0; }
svg text { font-family: sans-serif; font-size: 11px; fill: #222; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 6px; }
.note { color: #666; }
"""


def _e(text) -> str:
    """Escape text for HTML and SVG, in an element or a quoted attribute."""
    return html.escape(str(text), quote=True)


def _ms(time_ns: int) -> str:
    """Format ns as ms with three decimals (display only)."""
    return f'{time_ns / NS_PER_MS:.3f}'


def advance_ns(events: Sequence[FrameEvent]) -> Tuple[int, int]:
    """
    Return (simulated, steady) ns from each epoch's first frame to its last, added up.

    Per epoch, since simulated time jumps at a reset.
    """
    firsts: Dict[int, FrameEvent] = {}
    lasts: Dict[int, FrameEvent] = {}
    for event in events:
        if event.kind == FRAME:
            firsts.setdefault(event.epoch, event)
            lasts[event.epoch] = event
    simulated = sum(lasts[epoch].sim_ns - firsts[epoch].sim_ns for epoch in firsts)
    steady = sum(lasts[epoch].start_ns - firsts[epoch].start_ns for epoch in firsts)
    return simulated, steady


def overall_real_time_factor(events: Sequence[FrameEvent]) -> Optional[float]:
    """Return simulated over steady time across the frames (None without two frames)."""
    simulated, steady = advance_ns(events)
    return simulated / steady if steady > 0 else None


def plot_window_ns(events: Sequence[FrameEvent]) -> int:
    """Return the window of the real-time factor plot: about PLOT_POINTS over the frames."""
    starts = [event.start_ns for event in events if event.kind == FRAME]
    if not starts:
        return MIN_WINDOW_NS
    return max(MIN_WINDOW_NS, (max(starts) - min(starts)) // PLOT_POINTS)


def _colours(found: Sequence[Holder]) -> Dict[Tuple[str, str], str]:
    return {(h.kind, h.name): PALETTE[i % len(PALETTE)] for i, h in enumerate(found)}


def _summary(events: Sequence[FrameEvent], found: Sequence[Holder]) -> str:
    frames = [event for event in events if event.kind == FRAME]
    epochs = len({event.epoch for event in events})
    factor = overall_real_time_factor(events)
    rows = [
        ('wall time', f'{wall_ns(events) / NS_PER_SEC:.3f} s (first event to last, on the '
                      "server's steady clock)"),
        ('frames', f'{len(frames)}'),
        ('epochs', f'{epochs}'),
        ('simulated time', f'{format_seconds(advance_ns(events)[0])} s from the first frame '
                           'to the last of each epoch'),
        ('real-time factor', '-' if factor is None else f'{factor:.3f}x (simulated over '
                                                        'steady time, frame to frame)'),
        ('participants', f'{sum(1 for h in found if h.kind == "participant")}'),
        ('gates', f'{sum(1 for h in found if h.kind == "gate")}'),
        ('steps', f'{sum(1 for event in events if event.kind == STEP)}'),
        ('resets', f'{sum(1 for event in events if event.kind == RESET)}'),
        ('events', f'{len(events)}'),
    ]
    items = ''.join(f'<dt>{_e(name)}</dt><dd>{_e(value)}</dd>' for name, value in rows)
    return f'<dl id="summary">{items}</dl>'


def _tick_ns(longest_ns: int) -> int:
    """Return a round step (1, 2 or 5 times a power of ten ns) that cuts the axis in 2 to 5."""
    step = 1
    while True:
        for multiple in (1, 2, 5):
            if longest_ns <= 5 * step * multiple:
                return step * multiple
        step *= 10


def _timeline(events: Sequence[FrameEvent], found: Sequence[Holder]) -> str:
    """Return the SVG of the slowest frames: a lane per holder, its span from the /clock."""
    spans = slowest_frames(events, SLOWEST_FRAMES)
    if not spans:
        return '<p class="note">No frames.</p>'
    holds: Dict[Tuple[int, int], List[FrameEvent]] = defaultdict(list)
    for event in events:
        if event.kind in (DONE, GATE, ACK):
            holds[(event.epoch, event.sim_ns)].append(event)
    if not holds:
        return ('<p class="note">No frame was held: no participant, output gate or wait for '
                'acknowledgements took part in these frames.</p>')
    # Lanes in the holders' order (slowest first, as the table), the acknowledgements last.
    rank = {(HOLDER_KINDS[h.kind], h.name): index for index, h in enumerate(found)}
    for frame_holds in holds.values():
        frame_holds.sort(key=lambda e: (rank.get((e.kind, e.name), len(rank)), e.name))
    axis = _Axis(longest_ns=max(max(span.duration_ns for span in spans), 1))
    parts: List[str] = []
    y = 24
    for span in spans:
        frame_holds = holds[(span.epoch, span.sim_ns)]
        parts.append(_frame_row(span, frame_holds, _colours(found), y, axis))
        y += axis.header + axis.lane * max(1, len(frame_holds)) + 12
    tick = _tick_ns(axis.longest_ns)
    for time_ns in range(0, axis.longest_ns + 1, tick):
        x = axis.x(time_ns)
        parts.insert(0, f'<line x1="{x:.1f}" y1="16" x2="{x:.1f}" y2="{y}" stroke="#eee"/>'
                        f'<text x="{x:.1f}" y="12" text-anchor="middle">'
                        f'{time_ns / NS_PER_MS:g} ms</text>')
    width = axis.left + axis.width + 40
    return (f'<svg id="timeline" width="{width}" height="{y + 4}" viewBox="0 0 {width} {y + 4}" '
            f'role="img" aria-label="the slowest frames">{"".join(parts)}</svg>')


@dataclass(frozen=True)
class _Axis:
    """The timeline's geometry: ns since a frame's /clock to pixels, lanes and headers."""

    longest_ns: int
    left: int = 240
    width: int = 720
    lane: int = 14
    header: int = 18

    def x(self, since_clock_ns: int) -> float:
        """Return the x of a time since the frame's /clock."""
        return self.left + self.width * max(0, since_clock_ns) / self.longest_ns


def _frame_row(span: FrameSpan, frame_holds: Sequence[FrameEvent], colours, y: int,
               axis: _Axis) -> str:
    """
    Return one frame of the timeline: its line of text, then a lane per holder.

    A grey band behind the lanes spans the whole frame; each holder's bar, its hold.
    """
    last = f', held last by {span.holder}' if span.holder else ''
    lanes = max(1, len(frame_holds))
    top = y + axis.header
    parts = [f'<g class="frame" data-epoch="{span.epoch}" data-sim-ns="{span.sim_ns}" '
             f'data-duration-ns="{span.duration_ns}">',
             f'<text x="0" y="{y + 12}">frame {span.number} @ {format_seconds(span.sim_ns)} s'
             f' (epoch {span.epoch}): {_ms(span.duration_ns)} ms{_e(last)}</text>',
             f'<rect x="{axis.left}" y="{top - 2}" '
             f'width="{max(axis.x(span.duration_ns) - axis.left, 1.0):.1f}" '
             f'height="{axis.lane * lanes + 2}" fill="#f0f0f0"/>']
    for event in frame_holds:
        if event.kind == ACK:
            kind, colour, label = 'acknowledgements', ACK_COLOUR, f'acks {event.name}'
        else:
            kind = 'participant' if event.kind == DONE else 'gate'
            colour, label = colours[(kind, event.name)], event.name
        start = axis.x(event.start_ns - span.start_ns)
        end = axis.x(event.end_ns - span.start_ns)
        missed = '' if event.success else ' stroke="#000" stroke-dasharray="3,2"'
        state = '' if event.success else ' (never came)'
        parts.append(
            f'<text x="16" y="{top + 10}">{_e(label)}</text>'
            f'<rect class="hold" data-holder="{_e(event.name)}" data-kind="{kind}" '
            f'data-duration-ns="{event.duration_ns}" x="{start:.1f}" y="{top + 1}" '
            f'width="{max(end - start, 1.0):.1f}" height="{axis.lane - 3}" '
            f'fill="{colour}"{missed}><title>{_e(label)}: {_ms(event.duration_ns)} ms{state}'
            '</title></rect>')
        top += axis.lane
    parts.append('</g>')
    return ''.join(parts)


def _holders_table(found: Sequence[Holder], wall: int) -> str:
    colours = _colours(found)
    head = ('<tr><th>holder</th><th>kind</th><th>frames</th><th>p50 ms</th><th>p99 ms</th>'
            '<th>max ms</th><th>share of wall time %</th><th>missed</th></tr>')
    rows = []
    for holder in found:
        swatch = (f'<span class="swatch" style="background:{colours[(holder.kind, holder.name)]}">'
                  '</span>')
        rows.append(
            f'<tr class="holder" data-name="{_e(holder.name)}" data-kind="{holder.kind}" '
            f'data-p99-ns="{holder.p99_ns}">'
            f'<td>{swatch}{_e(holder.name)}</td><td class="kind">{holder.kind}</td>'
            f'<td>{len(holder.holds_ns)}</td><td>{_ms(holder.p50_ns)}</td>'
            f'<td>{_ms(holder.p99_ns)}</td><td>{_ms(holder.max_ns)}</td>'
            f'<td>{100 * holder.share(wall):.1f}</td><td>{holder.missed}</td></tr>')
    return f'<table id="holders">{head}{"".join(rows)}</table>'


def _plot(events: Sequence[FrameEvent]) -> str:
    """Return the SVG of the real-time factor over the run: a point per window."""
    window = plot_window_ns(events)
    points = real_time_factor(events, window)
    left, top, width, height = 60, 16, 900, 240
    origin = min((event.start_ns for event in events), default=0)
    end = max((event.end_ns for event in events), default=origin) - origin or 1
    high = max([1.0] + [factor for _, factor in points]) * 1.1

    def x(time_ns: int) -> float:
        return left + width * (time_ns - origin) / end

    def y(factor: float) -> float:
        return top + height * (1 - factor / high)
    parts = [f'<line x1="{left}" y1="{top + height}" x2="{left + width}" y2="{top + height}" '
             'stroke="#444"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + height}" stroke="#444"/>',
             f'<line x1="{left}" y1="{y(1.0):.1f}" x2="{left + width}" y2="{y(1.0):.1f}" '
             'stroke="#888" stroke-dasharray="5,4"/>',
             f'<text x="{left + width + 4}" y="{y(1.0) + 4:.1f}">1x</text>',
             f'<text x="{left - 6}" y="{top + 4}" text-anchor="end">{high:.2f}</text>',
             f'<text x="{left - 6}" y="{top + height + 4}" text-anchor="end">0</text>',
             f'<text x="{left}" y="{top + height + 18}">0 s</text>',
             f'<text x="{left + width}" y="{top + height + 18}" text-anchor="end">'
             f'{end / NS_PER_SEC:.3f} s (steady time)</text>']
    if len(points) > 1:
        line = ' '.join(f'{x(t):.1f},{y(f):.1f}' for t, f in points)
        parts.append(f'<polyline points="{line}" fill="none" stroke="#1f77b4"/>')
    for time_ns, factor in points:
        parts.append(f'<circle class="point" cx="{x(time_ns):.1f}" cy="{y(factor):.1f}" r="3" '
                     f'fill="#1f77b4"><title>{factor:.3f}x at '
                     f'{(time_ns - origin) / NS_PER_SEC:.3f} s</title></circle>')
    note = '' if points else '<p class="note">Too few frames for a real-time factor.</p>'
    return (f'<svg id="rtf" data-window-ns="{window}" width="{left + width + 40}" '
            f'height="{top + height + 28}" viewBox="0 0 {left + width + 40} '
            f'{top + height + 28}" role="img" aria-label="real-time factor">'
            f'{"".join(parts)}</svg>{note}<p class="note">Simulated over steady time per '
            f'window of at least {_ms(window)} ms of frames; a reset starts a new window.</p>')


def _resets(events: Sequence[FrameEvent]) -> str:
    origin = min((event.start_ns for event in events), default=0)
    items = [f'<li data-epoch="{event.epoch}">epoch {event.epoch}, '
             f'{(event.start_ns - origin) / NS_PER_SEC:.3f} s into the trace: '
             f'{format_seconds(event.count)} s -&gt; {format_seconds(event.sim_ns)} s: '
             f'{_e(event.detail)}</li>'
             for event in events if event.kind == RESET]
    none = '' if items else '<p class="note">No resets.</p>'
    return f'<ol id="resets">{"".join(items)}</ol>{none}'


def render_report(events: Sequence[FrameEvent], title: str) -> str:
    """Return the report of the events as one self-contained HTML page."""
    events = list(events)
    found = holders(events)
    wall = wall_ns(events)
    return ''.join([
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        f'<title>{_e(title)}</title><style>{STYLE}</style></head><body>',
        f'<h1>{_e(title)}</h1>',
        '<h2>Summary</h2>', _summary(events, found),
        f'<h2>The slowest frames</h2><p class="note">The frames held longest (up to '
        f'{SLOWEST_FRAMES}), '
        "the longest first: each participant's or gate's span, from the frame's /clock to its "
        'done or message (the light band: the whole frame; a grey bar: the wait for '
        'acknowledgements; a dashed outline: never came).</p>',
        _timeline(events, found),
        '<h2>Participants and gates</h2><p class="note">Slowest first (p99, then max); share: '
        'the sum of its holds over the wall time.</p>',
        _holders_table(found, wall),
        '<h2>Real-time factor</h2>', _plot(events),
        '<h2>Resets</h2>', _resets(events),
        '</body></html>\n'])


def format_holders(events: Sequence[FrameEvent]) -> str:
    """Return the participants and gates as a text table, slowest first."""
    found = holders(events)
    wall = wall_ns(events)
    if not found:
        return 'no participants or gates held a frame'
    width = max(len('holder'), *(len(holder.name) for holder in found))
    lines = [f'{"holder":<{width}}  {"kind":<11}  {"frames":>6}  {"p50 ms":>9}  '
             f'{"p99 ms":>9}  {"max ms":>9}  {"share %":>7}  {"missed":>6}']
    for holder in found:
        lines.append(f'{holder.name:<{width}}  {holder.kind:<11}  {len(holder.holds_ns):>6}  '
                     f'{_ms(holder.p50_ns):>9}  {_ms(holder.p99_ns):>9}  '
                     f'{_ms(holder.max_ns):>9}  {100 * holder.share(wall):>7.1f}  '
                     f'{holder.missed:>6}')
    return '\n'.join(lines)


def report_command(trace_path: str, html_path: Optional[str] = None, stdout=None,
                   stderr=None) -> int:
    """
    Carry out ``simclock report``: print the holders of a trace file, write its page.

    Return the exit code: 0, or 2 for a trace that cannot be read or a page not written.
    """
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    try:
        events, server = read_trace(trace_path)
    except TraceError as error:
        stderr.write(f'cannot read the trace: {error}\n')
        return EXIT_UNREADABLE
    frames = sum(1 for event in events if event.kind == FRAME)
    lines = [f'{trace_path}: {len(events)} events, {frames} frames, wall time '
             f'{wall_ns(events) / NS_PER_SEC:.3f} s', format_holders(events)]
    if html_path:
        title = f'{server or "sim_clock"} frame timeline: {os.path.basename(trace_path)}'
        try:
            with open(html_path, 'w', encoding='utf-8') as out:
                out.write(render_report(events, title))
        except OSError as error:
            stderr.write(f'cannot write {html_path}: {error.strerror or error}\n')
            return EXIT_UNREADABLE
        lines.append(f'report: {html_path}')
    stdout.write('\n'.join(lines) + '\n')
    stdout.flush()
    return EXIT_DONE
