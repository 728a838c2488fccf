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

"""The timeline report's executable as installed: a trace file in, the page out."""

import subprocess

from frame_timeline import HOLDERS
from frame_timeline import Page
from frame_timeline import synthetic_run
from harness import executable
from harness import TIMEOUT
import pytest
from sim_clock.client.frame_trace import write_trace

pytestmark = pytest.mark.process


def test_simclock_report_as_installed(tmp_path):
    """The executable: a trace file in, the page out, exit 0; a bad file: 2, no traceback."""
    trace = str(tmp_path / 'run.json')
    write_trace(trace, synthetic_run(), '/sim_clock')
    page_path = tmp_path / 'report.html'
    result = subprocess.run([executable('simclock'), 'report', trace, '--html', str(page_path)],
                            capture_output=True, text=True, timeout=TIMEOUT * 2)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[2].split()[0] == '/slow'
    page = Page(page_path.read_text())
    assert len(page.find('tr', within='holders', cls='holder')) == len(HOLDERS)
    (tmp_path / 'bad.json').write_text('[]')
    result = subprocess.run([executable('simclock'), 'report', str(tmp_path / 'bad.json')],
                            capture_output=True, text=True, timeout=TIMEOUT * 2)
    assert result.returncode == 2, result.stdout + result.stderr
    assert 'cannot read the trace: ' in result.stderr and 'not a Chrome trace' in result.stderr
    assert 'Traceback' not in result.stderr
