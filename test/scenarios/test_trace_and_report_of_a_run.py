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
``simclock trace`` and ``simclock report`` on a real run, as a user takes them.

A server in sync mode, two participant processes, one of which works 100 ms in one frame of
every ten; 50 frames stepped and traced (after 5 that are not). The trace file must show each
participant on its own track and the slow one's work in its holds; the report, as headless
Chromium renders it, must put the slow participant first.
"""

import json
import os
import shutil
import subprocess

from frame_timeline import check_worked_holds
from frame_timeline import Page
from frame_timeline import SLOW_PARTICIPANT
from frame_timeline import SLOW_WORK_NS
from harness import ChildProcess
from harness import executable
from harness import TIMEOUT
import pytest
from sim_clock.srv import Step

pytestmark = pytest.mark.process

MS = 1_000_000
STEP_NS = 10 * MS
FRAMES = 50
#: Frames stepped before those traced.
WARM_UP = 5
#: How long the slow participant works in one frame of every ten.
WORK_NS = SLOW_WORK_NS


def _simclock(domain_id: int, *args) -> subprocess.CompletedProcess:
    result = subprocess.run([executable('simclock'), *args], capture_output=True, text=True,
                            env=dict(os.environ, ROS_DOMAIN_ID=str(domain_id)),
                            timeout=TIMEOUT * 4)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_a_trace_and_its_report_name_the_slow_participant(
        start_server, client, domain_id, tmp_path):
    """One track per participant; /slow's tenth frames held for its work; it is reported first."""
    start_server({'sync': True, 'time_step': STEP_NS / 1e9})
    children = [ChildProcess(domain_id, SLOW_PARTICIPANT, str(tmp_path), args=(name, work))
                for name, work in (('fast', 0), ('slow', WORK_NS / 1e9))]
    try:
        for child in children:
            child.expect('joined')
        client.spin_until(lambda: len(client.status().participants) == 2, 'both participants')
        # The first frames also pay for the first /clock each process takes: stepped apart,
        # and left out of the trace by --frames.
        for steps in (WARM_UP, FRAMES):
            response = client.call(Step, 'step', Step.Request(steps=steps), timeout=60.0)
            assert response.success, response.message
        trace_path = tmp_path / 'run.json'
        line = _simclock(domain_id, 'trace', '--out', str(trace_path), '--frames',
                         str(FRAMES)).stdout
    finally:
        for child in children:
            child.stop()
    trace = json.loads(trace_path.read_text())
    kinds = [entry['args']['kind'] for entry in trace['traceEvents'] if entry['ph'] != 'M']
    assert line == (f'{len(kinds)} events, {FRAMES} frames, 2 participants, 0 gates: '
                    f'{trace_path}\n'), kinds
    assert (kinds.count('frame'), kinds.count('done'), kinds.count('step')) == (
        FRAMES, 2 * FRAMES, 1), kinds
    tracks = {entry['tid']: entry['args']['name'] for entry in trace['traceEvents']
              if entry['ph'] == 'M' and entry['name'] == 'thread_name'}
    participants = sorted(name for name in tracks.values() if name.startswith('participant '))
    assert participants == ['participant fast', 'participant slow']
    slow_track = next(tid for tid, name in tracks.items() if name == 'participant slow')
    holds = {}
    for entry in trace['traceEvents']:
        if entry['ph'] == 'M' or entry['args']['kind'] != 'done':
            continue
        args = entry['args']
        assert (entry['tid'] == slow_track) == (args['name'] == 'slow'), entry
        if args['name'] == 'slow':
            holds[args['sim_ns'] // STEP_NS] = args['end_ns'] - args['start_ns']
    assert sorted(holds) == list(range(WARM_UP + 1, WARM_UP + FRAMES + 1))
    # /slow works in its 10th, 20th, ... frame, and each of those holds contains the work.
    worked = {int(time_ns) // STEP_NS: int(work_ns)
              for child in children for line in child.output().splitlines()
              if line.startswith('worked ') for _, time_ns, work_ns in [line.split()]}
    assert sorted(worked) == [10, 20, 30, 40, 50], worked
    check_worked_holds(holds, worked)

    page_path = tmp_path / 'report.html'
    printed = _simclock(domain_id, 'report', str(trace_path), '--html', str(page_path)).stdout
    assert printed.splitlines()[2].split()[:3] == ['slow', 'participant', str(FRAMES)], printed
    chromium = shutil.which('chromium')
    if chromium is None:
        pytest.skip('chromium is not on PATH (scripts/setup.sh --test installs it): the '
                    'report was written, not rendered')
    dom = subprocess.run(
        [chromium, '--headless', '--no-sandbox', '--disable-gpu',
         f'--user-data-dir={tmp_path / "profile"}', '--dump-dom', page_path.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr
    rows = Page(dom.stdout).find('tr', within='holders', cls='holder')
    assert [(row.attrs['data-name'], row.attrs['data-kind']) for row in rows] == [
        ('slow', 'participant'), ('fast', 'participant')]
