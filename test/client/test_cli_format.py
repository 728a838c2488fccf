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

"""What simclock prints: status blocks, one-line views, resets, steps, reasons; pure Python."""

from dataclasses import replace

import pytest
from sim_clock.client.cli_format import for_the_command_line
from sim_clock.client.cli_format import format_progress
from sim_clock.client.cli_format import format_progress_line
from sim_clock.client.cli_format import format_reset
from sim_clock.client.cli_format import format_status
from sim_clock.client.cli_format import format_step
from sim_clock.client.cli_format import format_time
from sim_clock.client.cli_format import format_watch
from sim_clock.client.cli_format import measured_rate
from sim_clock.client.results import ResetEvent
from sim_clock.client.results import Status
from sim_clock.client.results import StepResult
from sim_clock.wire.progress_report import Playback
from sim_clock.wire.progress_report import ProgressReport

pytestmark = pytest.mark.fast

STATUS = Status(mode='simulation', sync=True, paused=False, frame=12, time_ns=120_000_000,
                epoch=2, owner='alice', real_time_factor=1.0, time_step_ns=10_000_000,
                publish_rate=10.0)
PROGRESS = ProgressReport(bag_time_ns=1_500_000_000, start_ns=1_000_000_000,
                          end_ns=3_000_000_000, percent=25.0, messages_out=40,
                          messages_total=200, rate=1.25, time_left=1.2, epoch=1,
                          playback=Playback.PLAYING)


def test_times_are_printed_with_every_digit():
    """Integer ns as seconds with nine decimals: nothing rounded."""
    assert format_time(0) == '0.000000000 s'
    assert format_time(12_000_000_001) == '12.000000001 s'


def test_a_status_block_says_the_state_line_by_line():
    """Mode, time, frame, epoch, holder, step, pace, publish rate; no participants."""
    assert format_status(STATUS).splitlines() == [
        'mode:      simulation, sync on',
        'time:      0.120000000 s',
        'frame:     12',
        'epoch:     2',
        'holder:    alice',
        'time_step: 10000000 ns',
        'rate:      1x',
        'publish:   10 Hz',
        'participants: (none)']


def test_a_status_block_names_pause_pace_views_alarms_and_the_cap():
    """Each optional part gets its line; real time says so without sync."""
    status = replace(STATUS, mode='real_time', paused=True, owner='', real_time_factor=0.0,
                     clock_views=('fast: offset 0.5 s',), other_clock_sources=('/x on /clock',),
                     max_clock_rate=100.0, clock_stride=10)
    lines = format_status(status).splitlines()
    assert lines[0] == 'mode:      real_time (paused)'
    assert 'holder:    (none)' in lines and 'rate:      as fast as possible' in lines
    assert 'publish:   10 Hz idle; free run at most 100 Hz (1 frame in 10)' in lines
    assert 'view:      fast: offset 0.5 s' in lines
    assert 'ALARM:     another clock source: /x on /clock' in lines
    assert 'every frame' in format_status(replace(status, clock_stride=1))


def test_participants_and_gates_are_listed_with_what_the_frame_waits_for():
    """One line each, aligned; what each finished; then who the frame waits for."""
    status = replace(STATUS, participants=('a', 'long_name'), participants_done_ns=(
        10_000_000, 0), participants_slowest=(0.25, 1.0), waiting_for=('long_name',),
        output_gates=('/cmd@0.02',), output_gates_satisfied_ns=(0,),
        output_gates_slowest=(0.5,), output_gates_waiting=())
    lines = format_status(status).splitlines()
    assert lines[lines.index('participants: 2') + 1:] == [
        '  a          done up to 0.010000000 s, slowest answer 0.250 s',
        '  long_name  done up to (no frame yet), slowest answer 1.000 s',
        'waits for: long_name',
        'output gates: 1',
        '  /cmd@0.02  released up to (no frame yet), slowest wait 0.500 s',
        'gates wait for: nothing']
    idle = format_status(replace(status, waiting_for=()))
    assert 'waits for: nothing (the current frame is finished)' in idle


def test_expected_participants_are_listed_with_what_each_lacks():
    """expected_participants: the nodes, then each one not ready with what it lacks."""
    status = replace(STATUS, expected_participants=('/planner', '/sim_clock_recorder'),
                     expected_missing=('/sim_clock_recorder: has not said it is ready on '
                                       '~/ready',))
    lines = format_status(status).splitlines()
    assert lines[lines.index('participants: (none)') + 1:] == [
        'expected: /planner, /sim_clock_recorder',
        'not ready (no frame goes out until they are):',
        '  /sim_clock_recorder: has not said it is ready on ~/ready']
    ready = format_status(replace(status, expected_missing=())).splitlines()
    assert ready[-1] == 'not ready: nothing (every expected node is ready)'


def test_the_measured_rate_is_none_when_it_cannot_be_told():
    """Simulated over wall time; none without a reading before, across a reset, or no wall."""
    assert measured_rate((0, 0, 1), (2_000, 1_000, 1)) == 0.5
    assert measured_rate((0, 5, 1), (1_000, 5, 1)) == 0
    assert measured_rate(None, (1_000, 5, 1)) is None
    assert measured_rate((0, 0, 1), (1_000, 5, 2)) is None
    assert measured_rate((1_000, 0, 1), (1_000, 5, 1)) is None


def test_the_watch_line():
    """State, frame, time, measured rate, holder, epoch, on one line."""
    assert format_watch(STATUS, 0.5) == (
        'sync on  frame 12  time 0.120000000 s  measured 0.500x  holder alice  epoch 2')
    free = replace(STATUS, sync=False, paused=True, owner='')
    assert format_watch(free, None) == (
        'free run (paused)  frame 12  time 0.120000000 s  measured -  holder (none)  epoch 2')
    assert format_watch(replace(STATUS, mode='real_time'), None).startswith('real_time  ')


def test_the_progress_block_and_line():
    """Playback, bag time and share, messages, epoch, pace, time left; the line adds the epoch."""
    assert format_progress(PROGRESS).splitlines() == [
        'playback:  playing',
        'bag time:  1.500000000 s (25.0% of 1.000000000 s to 3.000000000 s)',
        'messages:  40 of 200 out since the last reset',
        'epoch:     1',
        'rate:      1.250x',
        'time left: 1.2 s']
    ended = format_progress(replace(PROGRESS, time_left=0, rate=0))
    assert 'time left: 0 s (at or past the end)' in ended
    assert 'rate:      - (not measured: paused or idle)' in ended
    unknown = format_progress(replace(PROGRESS, time_left=-1))
    assert 'time left: - (not playing, or the pace is not measured yet)' in unknown
    assert format_progress_line(PROGRESS) == PROGRESS.line() + '  epoch 1'


def test_a_reset_and_a_step_on_one_line():
    """A reset: epoch, times before and after, the state, the cause; a step: where it left."""
    reset = ResetEvent(epoch=3, time_before_ns=2_000_000_000, time_after_ns=0,
                       cause='~/reset called', mode='simulation', sync=False)
    assert format_reset(reset) == ('epoch 3: 2.000000000 s -> 0.000000000 s (simulation, '
                                   'sync off): ~/reset called')
    assert '(real_time)' in format_reset(replace(reset, mode='real_time'))
    assert format_step(StepResult(frame=4, time_ns=40_000_000, epoch=1)) == (
        'frame 4, time 0.040000000 s (epoch 1)')
    assert format_step(STATUS) == 'frame 12, time 0.120000000 s (epoch 2)'


def test_reasons_name_simclock_commands_instead_of_services():
    """Service names become the commands that do the same; a holder is named with its fix."""
    assert for_the_command_line('release it: ~/set_sync false') == (
        "release it: 'simclock sync off'")
    assert for_the_command_line('epoch moved (ask ~/get_status, then step again)') == (
        "epoch moved (run 'simclock status', then step again)")
    reason = "sync mode is held by 'alice': only that user_id may step"
    assert for_the_command_line(reason).endswith(
        "(step as it: 'simclock step --user-id alice'; or release it: 'simclock sync off')")
    assert for_the_command_line('only that user_id may step', holder='bob').endswith(
        "(step as it: 'simclock step --user-id bob'; or release it: 'simclock sync off')")
    assert for_the_command_line('nothing to replace') == 'nothing to replace'
