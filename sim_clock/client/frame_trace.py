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
The frame timeline as a trace file: Chrome's trace event format, which Perfetto opens.

Free of rclpy. :func:`chrome_trace` turns frame events into the JSON object that
ui.perfetto.dev and chrome://tracing read: one process named after the server, a track for the
frames, the steps, the acknowledgements, the resets, each participant and each gate.
:func:`events_from_trace` reads the events back, exactly: each trace event's ``args`` carry its
frame event's fields as integers and text. :func:`take_trace` is ``simclock trace``: it reads
the events from a client (anything with ``frame_events(after, max_events)``) and writes them.
(doc/timeline.md)
"""

import json
import os
import sys
import time
from typing import Dict
from typing import Iterable
from typing import List
from typing import Optional
from typing import Sequence
from typing import Tuple

from sim_clock.core.frame_events import ACK
from sim_clock.core.frame_events import DONE
from sim_clock.core.frame_events import FRAME
from sim_clock.core.frame_events import FrameEvent
from sim_clock.core.frame_events import GATE
from sim_clock.core.frame_events import KIND_NAMES
from sim_clock.core.frame_events import MAX_LENGTH
from sim_clock.core.frame_events import RESET
from sim_clock.core.frame_events import STEP
from sim_clock.core.frame_stats import frame_spans
from sim_clock.core.units import format_seconds

#: ``otherData.format`` of a trace this module wrote: what tells it from other Chrome traces.
TRACE_FORMAT = 'sim_clock frame events'
TRACE_VERSION = 1
#: The one process of the trace (Chrome's format needs a pid; the server is that process).
PID = 1
#: The fixed tracks, by thread id (the order Perfetto shows them in); participants and gates
#: follow, each on its own, in name order.
FRAMES_TID, STEPS_TID, ACKS_TID, RESETS_TID = 1, 2, 3, 4
FIXED_TRACKS = ((FRAMES_TID, 'frames'), (STEPS_TID, 'steps'),
                (ACKS_TID, 'acknowledgements'), (RESETS_TID, 'resets'))
#: The prefix of a holder's track name, by event kind.
HOLDER_TRACKS = {DONE: 'participant', GATE: 'gate'}
#: The frame event's fields, in msg/FrameEvent.msg's order, and the JSON type each has in args
#: (kind is written as its name).
FIELDS = (('sequence', int), ('kind', str), ('epoch', int), ('sim_ns', int), ('start_ns', int),
          ('end_ns', int), ('name', str), ('count', int), ('success', bool), ('detail', str))
#: ``simclock trace`` exit codes, as the command line's: done; the file cannot be written.
EXIT_DONE, EXIT_NOT_RECORDING, EXIT_UNWRITABLE = 0, 1, 2
#: Events asked for in one call: a ring of up to 10^7 events comes in pieces of this many.
PAGE = 10_000
#: ``--follow`` asks the server this often (s): a default ring of 10,000 events holds several
#: seconds of frames even in a fast free run with participants.
FOLLOW_INTERVAL = 0.25


class TraceError(ValueError):
    """A file or object that is not a readable sim_clock trace; the message says why."""


def _us(time_ns: int):
    """Return ns as microseconds, the format's unit, from the integer (exact to 1 ns)."""
    return time_ns // 1000 if time_ns % 1000 == 0 else time_ns / 1000


def _tracks(events: Sequence[FrameEvent]) -> Dict[Tuple[int, str], int]:
    """Return the thread id of each participant's and gate's track: (kind, name) -> tid."""
    holders = sorted({(event.kind, event.name) for event in events
                      if event.kind in HOLDER_TRACKS})
    return {holder: RESETS_TID + 1 + index for index, holder in enumerate(holders)}


def _args(event: FrameEvent) -> dict:
    """Return every field of ``event`` as the trace keeps it, with its /clock time as text."""
    args = {field: getattr(event, field) for field, _ in FIELDS}
    args['kind'] = event.kind_name
    args['sim_time'] = format_seconds(event.sim_ns)
    return args


def _title(event: FrameEvent, number: Optional[int]) -> str:
    """Return what the trace viewer writes on the event's slice."""
    at = f'{format_seconds(event.sim_ns)} s'
    if event.kind == FRAME:
        return f'frame {event.count if number is None else number} @ {at}'
    if event.kind == DONE:
        return f'done @ {at}' if event.success else f'no done @ {at}'
    if event.kind == GATE:
        return f'message @ {at}' if event.success else f'no message @ {at}'
    if event.kind == ACK:
        return (f'acknowledgements @ {at}' if event.success
                else f'acknowledgements stalled @ {at}')
    if event.kind == STEP:
        return f'step {event.count} -> {at}' + ('' if event.success else ' (refused)')
    return f'reset -> {at}: {event.detail}'


def chrome_trace(events: Iterable[FrameEvent], server: str = '/sim_clock') -> dict:
    """
    Return the events as a Chrome trace (a JSON-ready dict), in the order given.

    Each event becomes exactly one trace event: a complete event ("X") from ``start_ns`` to
    ``end_ns`` (a frame: from its /clock to the last done, message or acknowledgement it
    waited for), a reset an instant ("i") across every track. ``ts`` and ``dur`` are
    microseconds worked out from each event's own integer ns; ``args`` hold its fields.
    """
    events = list(events)
    tracks = _tracks(events)
    # A FRAME event's span, found by its (epoch, sim_ns, start_ns): frame_spans keys frames
    # by (epoch, sim_ns), and the span starts when the FRAME event does.
    spans = {(span.epoch, span.sim_ns, span.start_ns): span for span in frame_spans(events)}
    trace_events = [{'ph': 'M', 'pid': PID, 'tid': 0, 'name': 'process_name',
                     'args': {'name': server}}]
    named = list(FIXED_TRACKS) + sorted(
        ((tid, f'{HOLDER_TRACKS[kind]} {name}') for (kind, name), tid in tracks.items()))
    for tid, name in named:
        trace_events.append({'ph': 'M', 'pid': PID, 'tid': tid, 'name': 'thread_name',
                             'args': {'name': name}})
        trace_events.append({'ph': 'M', 'pid': PID, 'tid': tid, 'name': 'thread_sort_index',
                             'args': {'sort_index': tid}})
    for event in events:
        end_ns = event.end_ns
        number = None
        if event.kind == FRAME:
            tid = FRAMES_TID
            span = spans.get((event.epoch, event.sim_ns, event.start_ns))
            if span is not None:
                end_ns, number = max(span.end_ns, event.end_ns), span.number
        elif event.kind in HOLDER_TRACKS:
            tid = tracks[(event.kind, event.name)]
        else:
            tid = {STEP: STEPS_TID, ACK: ACKS_TID, RESET: RESETS_TID}[event.kind]
        entry = {'name': _title(event, number), 'cat': event.kind_name, 'pid': PID, 'tid': tid,
                 'ts': _us(event.start_ns)}
        if event.kind == RESET:
            entry.update(ph='i', s='g')
        else:
            entry.update(ph='X', dur=_us(end_ns - event.start_ns))
        entry['args'] = _args(event)
        trace_events.append(entry)
    return {'traceEvents': trace_events, 'displayTimeUnit': 'ms',
            'otherData': {'format': TRACE_FORMAT, 'version': TRACE_VERSION, 'server': server}}


def _event_from(entry, index: int) -> FrameEvent:
    """Return the frame event a trace event carries; TraceError if its args are not one."""
    args = entry.get('args') if isinstance(entry, dict) else None
    if not isinstance(args, dict):
        raise TraceError(f'trace event {index} has no args object')
    values = {}
    for field, kind in FIELDS:
        value = args.get(field)
        # bool is an int in Python: an int field must not take true/false, nor the reverse.
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise TraceError(f'trace event {index}: args.{field} must be '
                             f'{"text" if kind is str else kind.__name__}, got {value!r}')
        values[field] = value
    if values['kind'] not in KIND_NAMES:
        raise TraceError(f'trace event {index}: args.kind must be one of '
                         f'{", ".join(KIND_NAMES)}, got {values["kind"]!r}')
    values['kind'] = KIND_NAMES.index(values['kind'])
    return FrameEvent(**values)


def events_from_trace(trace: dict) -> List[FrameEvent]:
    """
    Return the frame events a trace written by :func:`chrome_trace` holds, by sequence.

    Raise :class:`TraceError`, saying why, for anything else: another program's trace, a
    trace event whose args are not a frame event's.
    """
    if not isinstance(trace, dict) or not isinstance(trace.get('traceEvents'), list):
        raise TraceError('not a Chrome trace: expected a JSON object with a traceEvents list')
    other = trace.get('otherData')
    if not isinstance(other, dict) or other.get('format') != TRACE_FORMAT:
        raise TraceError('not a sim_clock trace: otherData.format is not '
                         f"'{TRACE_FORMAT}' (write one with 'simclock trace --out FILE')")
    if other.get('version') != TRACE_VERSION:
        raise TraceError(f'a sim_clock trace of version {other.get("version")!r}; this '
                         f'sim_clock reads version {TRACE_VERSION}')
    events = [_event_from(entry, index) for index, entry in enumerate(trace['traceEvents'])
              if not (isinstance(entry, dict) and entry.get('ph') == 'M')]
    return sorted(events, key=lambda event: event.sequence)


def server_of(trace: dict) -> str:
    """Return the server a sim_clock trace was taken from ('' if it does not say)."""
    other = trace.get('otherData') if isinstance(trace, dict) else None
    server = other.get('server') if isinstance(other, dict) else None
    return server if isinstance(server, str) else ''


def write_trace(path: str, events: Iterable[FrameEvent], server: str = '/sim_clock') -> None:
    """Write the events to ``path`` as a Chrome trace (compact JSON)."""
    with open(path, 'w', encoding='utf-8') as out:
        json.dump(chrome_trace(events, server), out, separators=(',', ':'))
        out.write('\n')


def read_trace(path: str) -> Tuple[List[FrameEvent], str]:
    """Return (events, server) of a trace file; TraceError, saying why, if it has none."""
    try:
        with open(path, encoding='utf-8') as source:
            trace = json.load(source)
    except OSError as error:
        raise TraceError(f'{path}: {error.strerror or error}') from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise TraceError(f'{path}: not JSON ({error})') from None
    try:
        return events_from_trace(trace), server_of(trace)
    except TraceError as error:
        raise TraceError(f'{path}: {error}') from None


def summary(events: Sequence[FrameEvent]) -> Dict[str, int]:
    """Return how many events, frames, participants and gates the events hold."""
    return {
        'events': len(events),
        'frames': sum(1 for event in events if event.kind == FRAME),
        'participants': len({event.name for event in events if event.kind == DONE}),
        'gates': len({event.name for event in events if event.kind == GATE}),
    }


def _plural(count: int, word: str) -> str:
    return f'{count} {word}' if count == 1 else f'{count} {word}s'


def format_summary(events: Sequence[FrameEvent], path: str) -> str:
    """Return the line ``simclock trace`` prints: what it wrote, and where."""
    counts = summary(events)
    return (f"{_plural(counts['events'], 'event')}, {_plural(counts['frames'], 'frame')}, "
            f"{_plural(counts['participants'], 'participant')}, "
            f"{_plural(counts['gates'], 'gate')}: {path}")


# -- reading the server's ring: simclock trace -------------------------------------------------

def read_ring(client) -> Tuple[List[FrameEvent], int, int]:
    """
    Return (events, lost, capacity): every event the server's ring holds now, oldest first.

    Read in pieces of :data:`PAGE`, up to the last event recorded when the first piece came;
    ``lost``: events that left the ring while the pieces were read (the ring overflowed).
    """
    first = client.frame_events(0, PAGE)
    events = list(first.events)
    lost = 0
    while events and events[-1].sequence < first.last_sequence:
        piece = client.frame_events(events[-1].sequence, PAGE)
        if not piece.events:
            break
        lost += piece.dropped
        events.extend(piece.events)
    return [e for e in events if e.sequence <= first.last_sequence], lost, first.capacity


def last_frames(events: Sequence[FrameEvent], frames: int) -> List[FrameEvent]:
    """Return the events from the ``frames``-th last FRAME event on (all if fewer frames)."""
    starts = [index for index, event in enumerate(events) if event.kind == FRAME]
    if len(starts) < frames:
        return list(events)
    return list(events[starts[-frames]:])


def follow(client, seconds: float, interval: float = FOLLOW_INTERVAL,
           clock=time.monotonic, sleep=time.sleep) -> Tuple[List[FrameEvent], int, int]:
    """
    Return (events, dropped, capacity): what the server records over ``seconds`` from now.

    Asks every ``interval`` s for the events after the last one it has; ``dropped``: events
    that left the ring before they were asked for (it holds ``capacity`` of them). Ctrl-C
    ends it early with what came so far.
    """
    start = client.frame_events(0, 1)
    last, capacity = start.last_sequence, start.capacity
    events: List[FrameEvent] = []
    dropped = 0
    deadline = clock() + seconds
    try:
        while True:
            sleep(max(0.0, min(interval, deadline - clock())))
            piece = client.frame_events(last, 0)
            dropped += piece.dropped
            events.extend(piece.events)
            # The next call asks after the newest event had; with none, after the same one
            # (a ring that held none above it has dropped them all, counted above).
            last = piece.events[-1].sequence if piece.events else max(
                last, piece.last_sequence)
            capacity = piece.capacity
            if clock() >= deadline:
                break
    except KeyboardInterrupt:
        pass
    return events, dropped, capacity


def take_trace(client, out_path: str, frames: Optional[int] = None,
               follow_seconds: Optional[float] = None, stdout=None, stderr=None) -> int:
    """
    Carry out ``simclock trace``: read the events, write ``out_path``; return the exit code.

    Default: every event the server's ring holds; ``frames``: from the ``frames``-th last
    frame on; ``follow_seconds``: what is recorded over that much wall time from now.
    """
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    folder = os.path.dirname(os.path.abspath(out_path))
    if not os.path.isdir(folder):
        stderr.write(f'cannot write {out_path}: no such directory {folder}\n')
        return EXIT_UNWRITABLE
    server = client.server
    if not client.frame_events(0, 1).capacity:
        stderr.write(f'{server} records no frame events: its parameter frame_events is 0 '
                     f'(turn it on: ros2 param set {server} frame_events 10000)\n')
        return EXIT_NOT_RECORDING
    if follow_seconds is not None:
        events, dropped, capacity = follow(client, follow_seconds)
        if dropped:
            stderr.write(
                f'{dropped} events were lost: the ring holds {capacity} and overflowed between '
                f'two reads (raise it: ros2 param set {server} frame_events '
                f'{min(capacity * 10, MAX_LENGTH)})\n')
    else:
        events, lost, capacity = read_ring(client)
        if lost:
            stderr.write(f'{lost} events left the ring ({capacity} long) while it was read\n')
        if frames is not None:
            events = last_frames(events, frames)
            held = summary(events)['frames']
            if held < frames:
                stderr.write(f'the ring holds {held} frames, not {frames}: all of them written '
                             f'(raise ring length: ros2 param set {server} frame_events N)\n')
    try:
        write_trace(out_path, events, server)
    except OSError as error:
        stderr.write(f'cannot write {out_path}: {error.strerror or error}\n')
        return EXIT_UNWRITABLE
    stdout.write(format_summary(events, out_path) + '\n')
    stdout.flush()
    return EXIT_DONE
