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
The frame timeline as a Chrome trace (client.frame_trace), on events recorded here.

Exact values, the tracks, the round trip through JSON text, and ``simclock trace``'s reading
of a server's ring through a client that answers from a ring of its own.
"""

from decimal import Decimal
import io
import json

from frame_timeline import MS
from frame_timeline import slow_ns
from frame_timeline import synthetic_run
from frame_timeline import T0
from hypothesis import given
from hypothesis import strategies as st
import pytest
from sim_clock.client import frame_trace as trace_module
from sim_clock.client.frame_trace import chrome_trace
from sim_clock.client.frame_trace import events_from_trace
from sim_clock.client.frame_trace import format_summary
from sim_clock.client.frame_trace import read_trace
from sim_clock.client.frame_trace import take_trace
from sim_clock.client.frame_trace import TraceError
from sim_clock.client.frame_trace import write_trace
from sim_clock.client.results import FrameEvents
from sim_clock.core.frame_events import DONE
from sim_clock.core.frame_events import FRAME
from sim_clock.core.frame_events import FrameEvent
from sim_clock.core.frame_events import FrameEventRing
from sim_clock.core.frame_events import KIND_NAMES
from sim_clock.core.units import format_seconds

pytestmark = pytest.mark.fast

FIELDS = ('sequence', 'kind', 'epoch', 'sim_ns', 'start_ns', 'end_ns', 'name', 'count',
          'success', 'detail')


def _parsed(events, server='/sim_clock'):
    """Return the trace as a viewer reads it: through JSON text."""
    return json.loads(json.dumps(chrome_trace(events, server)))


def _us_to_ns(value) -> int:
    """Return the ns that a ts or dur read from JSON says, exactly (its decimal text)."""
    exact = Decimal(repr(value)) * 1000
    assert exact == exact.to_integral_value(), value
    return int(exact)


def _tracks(trace) -> dict:
    return {entry['tid']: entry['args']['name'] for entry in trace['traceEvents']
            if entry['ph'] == 'M' and entry['name'] == 'thread_name'}


def _data(trace) -> list:
    return [entry for entry in trace['traceEvents'] if entry['ph'] != 'M']


def test_every_event_is_one_trace_event_that_carries_all_its_fields():
    """One trace event per frame event, in order; args: each field exactly, and sim_time."""
    events = synthetic_run()
    data = _data(_parsed(events))
    assert len(data) == len(events) == 45
    for entry, event in zip(data, events):
        args = entry['args']
        assert {field: args[field] for field in FIELDS} == {
            'sequence': event.sequence, 'kind': KIND_NAMES[event.kind], 'epoch': event.epoch,
            'sim_ns': event.sim_ns, 'start_ns': event.start_ns, 'end_ns': event.end_ns,
            'name': event.name, 'count': event.count, 'success': event.success,
            'detail': event.detail}
        assert args['sim_time'] == format_seconds(event.sim_ns)
        assert entry['cat'] == KIND_NAMES[event.kind] and entry['pid'] == 1
        assert _us_to_ns(entry['ts']) == event.start_ns


def test_one_process_named_after_the_server_and_a_track_per_participant_and_gate():
    """The fixed tracks first, then each participant and gate, sorted by their tid."""
    trace = _parsed(synthetic_run(), '/robot1/sim_clock')
    names = [entry for entry in trace['traceEvents'] if entry['name'] == 'process_name']
    assert [entry['args']['name'] for entry in names] == ['/robot1/sim_clock']
    tracks = _tracks(trace)
    assert [tracks[tid] for tid in sorted(tracks)] == [
        'frames', 'steps', 'acknowledgements', 'resets', 'participant /planning',
        'participant /slow', 'gate /cmd']
    order = {entry['tid']: entry['args']['sort_index'] for entry in trace['traceEvents']
             if entry['name'] == 'thread_sort_index'}
    assert order == {tid: tid for tid in tracks}
    expected_track = {'frame': 'frames', 'step': 'steps', 'ack': 'acknowledgements',
                      'reset': 'resets'}
    for entry in _data(trace):
        kind, name = entry['args']['kind'], entry['args']['name']
        track = expected_track.get(kind) or (
            f'participant {name}' if kind == 'done' else f'gate {name}')
        assert tracks[entry['tid']] == track, entry


def test_a_frame_spans_its_clock_to_the_last_done_message_or_acknowledgement():
    """Frame 7: 20 ms of /slow; frame 3: its acknowledgements end it; exact to the ns."""
    events = synthetic_run()
    frames = {(entry['args']['epoch'], entry['args']['sim_ns']): entry
              for entry in _data(_parsed(events)) if entry['args']['kind'] == 'frame'}
    seventh = frames[(0, 70 * MS)]
    assert seventh['ph'] == 'X' and seventh['name'] == 'frame 7 @ 0.070000000 s'
    assert _us_to_ns(seventh['dur']) == slow_ns(7) == 20_000_011
    third = frames[(0, 30 * MS)]
    ack = next(e for e in events if e.kind_name == 'ack')
    assert _us_to_ns(third['ts']) + _us_to_ns(third['dur']) == ack.end_ns
    first = frames[(0, 10 * MS)]
    assert _us_to_ns(first['ts']) == T0 and first['ts'] == 1_234_567_891.234
    # Epoch 1's frames count again from 1.
    assert frames[(1, 10 * MS)]['name'] == 'frame 1 @ 0.010000000 s'


def test_holds_are_spans_and_a_reset_is_an_instant_across_all_tracks():
    """DONE, GATE, ACK, STEP: 'X' from start to end; RESET: 'i' of global scope."""
    events = synthetic_run()
    for entry, event in zip(_data(_parsed(events)), events):
        if event.kind_name == 'reset':
            assert (entry['ph'], entry['s']) == ('i', 'g') and 'dur' not in entry
            assert entry['name'] == 'reset -> 0.000000000 s: ~/reset by "tester" <operator>'
        elif event.kind != FRAME:
            assert entry['ph'] == 'X'
            assert _us_to_ns(entry['dur']) == event.duration_ns
    gate_names = {entry['name'] for entry in _data(_parsed(events))
                  if entry['args']['kind'] == 'gate'}
    assert gate_names == {'message @ 0.010000000 s', 'message @ 0.030000000 s',
                          'message @ 0.050000000 s', 'message @ 0.070000000 s',
                          'no message @ 0.090000000 s'}


def test_the_round_trip_through_json_text_is_exact(tmp_path):
    """events_from_trace(json) == the events; write_trace and read_trace through a file."""
    events = synthetic_run()
    assert events_from_trace(_parsed(events)) == events
    path = tmp_path / 'run.json'
    write_trace(str(path), events, '/robot1/sim_clock')
    assert read_trace(str(path)) == (events, '/robot1/sim_clock')
    json.loads(path.read_text())  # plain JSON


EVENTS = st.builds(
    FrameEvent, sequence=st.integers(1, 2**64 - 1), kind=st.integers(0, len(KIND_NAMES) - 1),
    epoch=st.integers(0, 2**32 - 1), sim_ns=st.integers(-2**63, 2**63 - 1),
    start_ns=st.integers(-2**63, 2**63 - 1), end_ns=st.integers(-2**63, 2**63 - 1),
    name=st.text(), count=st.integers(-2**63, 2**63 - 1), success=st.booleans(),
    detail=st.text())


@given(events=st.lists(EVENTS, max_size=20, unique_by=lambda event: event.sequence))
def test_any_events_come_back_exactly(events):
    """Whatever the values (the message types' full ranges, any text), by sequence."""
    events.sort(key=lambda event: event.sequence)
    assert events_from_trace(_parsed(events)) == events


@pytest.mark.parametrize('trace, reason', [
    ([], 'not a Chrome trace'),
    ({'traceEvents': {}}, 'not a Chrome trace'),
    ({'traceEvents': []}, 'not a sim_clock trace'),
    ({'traceEvents': [], 'otherData': {'format': 'sim_clock frame events', 'version': 9}},
     'version 9'),
])
def test_other_traces_are_refused_saying_why(trace, reason):
    with pytest.raises(TraceError, match=reason):
        events_from_trace(trace)


@pytest.mark.parametrize('field, value, reason', [
    ('sim_ns', True, 'args.sim_ns must be int, got True'),
    ('success', 1, 'args.success must be bool, got 1'),
    ('start_ns', 1.5, 'args.start_ns must be int'),
    ('name', None, 'args.name must be text'),
    ('kind', 'tick', "args.kind must be one of frame, done, gate, ack, step, reset, got 'tick'"),
])
def test_an_event_whose_args_are_not_a_frame_events_is_named(field, value, reason):
    trace = _parsed(synthetic_run())
    data = [index for index, entry in enumerate(trace['traceEvents']) if entry['ph'] != 'M']
    trace['traceEvents'][data[3]]['args'][field] = value
    with pytest.raises(TraceError, match=f'trace event {data[3]}: ' + reason.replace('(', r'\(')):
        events_from_trace(trace)


def test_a_file_that_is_not_a_trace_is_named_with_the_cause(tmp_path):
    with pytest.raises(TraceError, match='absent.json: No such file'):
        read_trace(str(tmp_path / 'absent.json'))
    (tmp_path / 'text.json').write_text('frames!')
    with pytest.raises(TraceError, match='text.json: not JSON'):
        read_trace(str(tmp_path / 'text.json'))
    (tmp_path / 'other.json').write_text('{"traceEvents": []}')
    with pytest.raises(TraceError, match='other.json: not a sim_clock trace'):
        read_trace(str(tmp_path / 'other.json'))


# -- simclock trace: reading the ring ----------------------------------------------------------

class RingServer:
    """A client's frame_events answered from a ring, as the server answers ~/get_frame_events."""

    server = '/sim_clock'

    def __init__(self, events, length=1000):
        self.ring = FrameEventRing(length)
        self.calls = []
        for event in events:
            self.add(event)

    def add(self, event):
        self.ring.record(event.kind, event.epoch, event.sim_ns, event.start_ns, event.end_ns,
                         event.name, event.count, event.success, event.detail)

    def frame_events(self, after=0, max_events=0):
        self.calls.append((after, max_events))
        events, dropped = self.ring.after(after, max_events)
        return FrameEvents(tuple(events), dropped, self.ring.last_sequence, self.ring.length, 0)


def _take(server, tmp_path, **options):
    out, err = io.StringIO(), io.StringIO()
    path = str(tmp_path / 'run.json')
    code = take_trace(server, path, stdout=out, stderr=err, **options)
    events = read_trace(path)[0] if code == 0 else None
    return code, events, out.getvalue(), err.getvalue()


def test_trace_writes_every_event_the_ring_holds_read_in_pieces(tmp_path, monkeypatch):
    """Pieces of 7 events: all 45 come, in order, and the line counts them."""
    monkeypatch.setattr(trace_module, 'PAGE', 7)
    events = synthetic_run()
    server = RingServer(events)
    code, written, out, err = _take(server, tmp_path)
    assert (code, err) == (0, '')
    assert written == events
    assert out == f'45 events, 13 frames, 2 participants, 1 gate: {tmp_path / "run.json"}\n'
    assert len([call for call in server.calls if call[1] == 7]) == 7


def test_trace_frames_n_starts_at_the_nth_last_frame(tmp_path):
    """--frames 3: from epoch 1's first FRAME event on; --frames 99: all, and it says so."""
    events = synthetic_run()
    code, written, _, err = _take(RingServer(events), tmp_path, frames=3)
    assert (code, err) == (0, '')
    first = next(event for event in events if event.kind == FRAME and event.epoch == 1)
    assert written == [event for event in events if event.sequence >= first.sequence]
    code, written, _, err = _take(RingServer(events), tmp_path, frames=99)
    assert code == 0 and written == events
    assert 'the ring holds 13 frames, not 99' in err


def test_trace_of_a_server_that_records_nothing_says_how_to_turn_it_on(tmp_path):
    code, _, out, err = _take(RingServer([], length=0), tmp_path)
    assert (code, out) == (1, '')
    assert 'records no frame events: its parameter frame_events is 0' in err
    assert 'ros2 param set /sim_clock frame_events 10000' in err


def test_trace_to_a_folder_that_does_not_exist_is_refused_before_reading(tmp_path):
    server = RingServer(synthetic_run())
    err = io.StringIO()
    code = take_trace(server, str(tmp_path / 'none' / 'run.json'), stderr=err)
    assert code == 2 and 'no such directory' in err.getvalue()
    assert server.calls == []


class Stepper:
    """A steady clock and a sleep that records events as the server would meanwhile."""

    def __init__(self, server, events, per_sleep):
        self.now = 0.0
        self.server = server
        self.pending = list(events)
        self.per_sleep = per_sleep
        self.sleeps = []

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds
        for _ in range(min(self.per_sleep, len(self.pending))):
            self.server.add(self.pending.pop(0))


def test_follow_writes_only_what_is_recorded_meanwhile():
    """10 events already there; 35 recorded during 1 s of polls every 0.25 s: those 35."""
    events = synthetic_run()
    server = RingServer(events[:10])
    stepper = Stepper(server, events[10:], per_sleep=12)
    followed, dropped, capacity = trace_module.follow(
        server, 1.0, interval=0.25, clock=stepper.clock, sleep=stepper.sleep)
    assert (dropped, capacity) == (0, 1000)
    assert followed == events[10:]
    assert stepper.sleeps == [0.25] * 4


def test_follow_counts_what_left_the_ring_between_two_reads(tmp_path, monkeypatch):
    """A ring of 5 and 10 events between reads: 5 lost a read; the warning names the ring."""
    events = synthetic_run()
    server = RingServer([], length=5)
    stepper = Stepper(server, events, per_sleep=10)
    followed, dropped, capacity = trace_module.follow(
        server, 1.0, interval=0.25, clock=stepper.clock, sleep=stepper.sleep)
    assert (dropped, capacity) == (20, 5)
    assert [event.sequence for event in followed] == [
        s for read in range(4) for s in range(10 * read + 6, 10 * read + 11)]
    monkeypatch.setattr(trace_module, 'follow',
                        lambda client, seconds: (followed, dropped, capacity))
    code, _, out, err = _take(server, tmp_path, follow_seconds=1.0)
    assert code == 0 and out.startswith('20 events, ')
    assert err == ('20 events were lost: the ring holds 5 and overflowed between two reads '
                   '(raise it: ros2 param set /sim_clock frame_events 50)\n')


def test_the_summary_line_counts_in_words():
    one = [FrameEvent(1, FRAME, 0, 0, 0, 0, count=1), FrameEvent(2, DONE, 0, 0, 0, 5, 'p')]
    assert format_summary(one, 'a.json') == '2 events, 1 frame, 1 participant, 0 gates: a.json'
