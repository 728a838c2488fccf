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
The figures a reader sees: the benchmark writes them, and the README quotes only those.

doc/performance.md holds the table of the latest full run of ``scripts/run_benchmarks.sh``,
which the benchmark itself writes between two markers, with its date, machine and commit. A
figure in the README's prose (a ratio, a rate, a latency, a percentage, a count of runs) that
the table does not hold is one a reader cannot tell is true today.
"""

import os
import re
import sys

from harness import ROOT
import pytest

pytestmark = pytest.mark.fast

sys.path.insert(0, os.path.join(ROOT, 'benchmarks', 'performance'))
try:
    from run import markdown  # noqa: E402
    from run import TABLE_BEGIN  # noqa: E402
    from run import TABLE_END  # noqa: E402
    from run import write_doc  # noqa: E402
finally:
    sys.path.pop(0)

#: What reads as a measured figure in prose: 1.17x, 2,355 frames/s, 240 us, 64%, 20 of 20,
#: and a date (a run's). Settings (a 50 ms timer, frames of 1 ms) are not figures.
FIGURE = re.compile(r'\d[\d,]*(?:\.\d+)?\s?(?:x\b|%|us\b|frames/s|msg/s)'
                    r'|\b\d+ (?:times )?of \d+\b|\b20\d\d-\d\d-\d\d\b')

ROW = {'name': 'step_latency_p50', 'unit': 'us', 'value': 240.0, 'min': 230.0, 'max': 250.0,
       'baseline': 200.0, 'baseline_min': 190.0, 'baseline_max': 210.0, 'ratio': 1.2,
       'target': 'ratio <= 1.2', 'met': True}


def _table() -> str:
    with open(os.path.join(ROOT, 'doc', 'performance.md')) as performance:
        text = performance.read()
    return text.split(TABLE_BEGIN, 1)[1].split(TABLE_END, 1)[0]


def _prose(text: str) -> str:
    """Return ``text`` without its code blocks and code spans (commands, log lines)."""
    return re.sub(r'`[^`]*`', '', re.sub(r'```.*?```', '', text, flags=re.S))


def test_the_latest_full_run_is_a_dated_table_of_every_figure():
    """The table the benchmark wrote: its date, commit and machine, then a row per figure."""
    table = _table().strip().splitlines()
    assert re.match(r'\d{4}-\d\d-\d\d, commit [0-9a-f]{7,}.*, \d+ repetitions of every case, '
                    r'on \d+ CPUs ', table[0]), table[:1]
    assert table[2].startswith('| figure | unit |') and len(table) > 10, table


def test_the_readme_quotes_no_figure_the_latest_full_run_does_not_hold():
    with open(os.path.join(ROOT, 'README.md')) as readme:
        prose = _prose(readme.read())
    table = _table()
    quoted = [match.group(0) for match in FIGURE.finditer(prose)]
    missing = [figure for figure in quoted if figure not in table]
    assert not missing, (f'the README quotes {missing}, which the latest full run in '
                         'doc/performance.md does not hold: quote the table, or link to it')


def test_a_full_run_replaces_the_last_table_and_keeps_the_rest(tmp_path):
    path = tmp_path / 'performance.md'
    path.write_text(f'# Before\n\n{TABLE_BEGIN}\nthe last run\n{TABLE_END}\n\n## After\n')
    for value in (240.0, 260.0):
        write_doc(str(path), [dict(ROW, value=value)], f'run of {value:g}')
    text = path.read_text()
    assert text == (f'# Before\n\n{TABLE_BEGIN}\nrun of 260\n\n'
                    + '\n'.join(markdown([dict(ROW, value=260.0)]))
                    + f'\n{TABLE_END}\n\n## After\n')


def test_a_document_without_the_markers_is_refused_unchanged(tmp_path):
    path = tmp_path / 'performance.md'
    path.write_text('# Performance\n')
    with pytest.raises(SystemExit, match='has no place for the table'):
        write_doc(str(path), [ROW], 'a run')
    assert path.read_text() == '# Performance\n'
