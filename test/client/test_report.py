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
The report page (client.report) of a timeline recorded here, and ``simclock report``.

The page is read back element by element (test/frame_timeline.py's ``Page``); what a browser
makes of it: test_report_in_browser.py.
"""

import io
import json

from frame_timeline import FRAMES
from frame_timeline import HOLDERS
from frame_timeline import MS
from frame_timeline import Page
from frame_timeline import synthetic_run
import pytest
from sim_clock.client.frame_trace import write_trace
from sim_clock.client.report import format_holders
from sim_clock.client.report import overall_real_time_factor
from sim_clock.client.report import plot_window_ns
from sim_clock.client.report import render_report
from sim_clock.client.report import report_command
from sim_clock.core.frame_events import DONE
from sim_clock.core.frame_events import FRAME
from sim_clock.core.frame_events import FrameEvent
from sim_clock.core.frame_stats import real_time_factor

pytestmark = pytest.mark.fast


@pytest.fixture(scope='module')
def page():
    """Return the report of the synthetic run, parsed."""
    return Page(render_report(synthetic_run(), 'a run'))


def _cells(row) -> list:
    return [cell.text for cell in row.children if cell.tag == 'td']


def test_the_holders_table_lists_each_holder_slowest_first(page):
    """One row per participant and gate, in frame_stats.holders' order, values in ms."""
    rows = page.find('tr', within='holders', cls='holder')
    assert [(row.attrs['data-name'], row.attrs['data-kind']) for row in rows] == HOLDERS
    events = synthetic_run()
    wall = max(e.end_ns for e in events) - min(e.start_ns for e in events)
    slow_total = 9 * 500_007 + 20_000_011
    assert _cells(rows[0]) == ['/slow', 'participant', '10', '0.500', '20.000', '20.000',
                               f'{100 * slow_total / wall:.1f}', '0']
    assert _cells(rows[1])[:3] + _cells(rows[1])[-1:] == ['/cmd', 'gate', '5', '1']
    assert _cells(rows[1])[5] == '5.000'
    assert _cells(rows[2])[:6] == ['/planning', 'participant', '13', '1.500', '2.900', '2.900']


def test_the_timeline_draws_the_slowest_frames_with_each_holders_span(page):
    """13 frames, the slowest (frame 7, /slow's 20 ms) first, its bar the full width."""
    frames = page.find('g', within='timeline', cls='frame')
    assert len(frames) == FRAMES
    first = frames[0]
    assert (first.attrs['data-epoch'], first.attrs['data-sim-ns']) == ('0', str(70 * MS))
    assert first.attrs['data-duration-ns'] == '20000011'
    holds = [child for child in first.children if 'hold' in child.classes]
    # Lanes in the table's order: slowest holder first.
    assert [hold.attrs['data-holder'] for hold in holds] == [name for name, _ in HOLDERS]
    assert float(holds[0].attrs['width']) == 720.0
    assert 'frame 7 @ 0.070000000 s (epoch 0): 20.000 ms, held last by /slow' in first.text
    durations = [int(frame.attrs['data-duration-ns']) for frame in frames]
    assert durations == sorted(durations, reverse=True)


def test_the_plot_has_a_point_per_window_of_the_real_time_factor(page):
    svg = page.by_id('rtf')
    window = int(svg.attrs['data-window-ns'])
    events = synthetic_run()
    assert window == plot_window_ns(events)
    points = page.find('circle', within='rtf', cls='point')
    assert len(points) == len(real_time_factor(events, window)) > 5


def test_the_resets_are_listed_with_their_cause(page):
    items = page.find('li', within='resets')
    assert len(items) == 1
    assert items[0].text.endswith(
        '0.100000000 s -> 0.000000000 s: ~/reset by "tester" <operator>')


def test_the_summary_counts_frames_and_epochs(page):
    terms = [element.text for element in page.find('dt', within='summary')]
    values = [element.text for element in page.find('dd', within='summary')]
    summary = dict(zip(terms, values))
    assert (summary['frames'], summary['epochs'], summary['resets']) == ('13', '2', '1')
    # Epoch 0 from 10 to 100 ms, epoch 1 from 10 to 30 ms.
    assert summary['simulated time'].startswith('0.110000000 s from the first frame')
    assert (summary['participants'], summary['gates'], summary['steps']) == ('2', '1', '2')


def test_the_page_loads_nothing_from_elsewhere():
    """No script, link, image, font or URL: it opens as it is, offline."""
    text = render_report(synthetic_run(), 'a run')
    for needle in ('http:', 'https:', '<script', '<link', '<img', 'src=', 'url(', '@import',
                   '@font-face'):
        assert needle not in text, needle


def test_names_are_escaped():
    """A holder named like markup stays text, and its data-name comes back as given."""
    name = '<b>"me" & you</b>'
    events = [FrameEvent(1, FRAME, 0, 10, 100, 100, count=1),
              FrameEvent(2, DONE, 0, 10, 100, 200, name=name)]
    page = Page(render_report(events, '<title>'))
    assert [row.attrs['data-name'] for row in page.find('tr', cls='holder')] == [name]
    assert page.find('b') == [] and page.find('h1')[0].text == '<title>'


def test_an_empty_timeline_is_a_page_that_says_so():
    page = Page(render_report([], 'nothing'))
    assert page.find('tr', cls='holder') == [] and page.find('circle') == []
    assert any(element.text == 'No frames.' for element in page.find('p'))


def test_the_overall_real_time_factor_adds_up_each_epoch():
    """10 ms frames every 20 ms in epoch 0, every 5 ms in epoch 1: 40 ms over 50 ms."""
    events = [FrameEvent(k + 1, FRAME, 0, k * 10 * MS, k * 20 * MS, k * 20 * MS)
              for k in range(3)]
    events += [FrameEvent(k + 4, FRAME, 1, k * 10 * MS, (100 + 5 * k) * MS, (100 + 5 * k) * MS)
               for k in range(3)]
    assert overall_real_time_factor(events) == 40 / 50
    assert overall_real_time_factor(events[:1]) is None


# -- simclock report ---------------------------------------------------------------------------

def test_report_prints_the_holders_and_writes_the_page(tmp_path):
    trace = str(tmp_path / 'run.json')
    write_trace(trace, synthetic_run(), '/sim_clock')
    out, err = io.StringIO(), io.StringIO()
    assert report_command(trace, str(tmp_path / 'report.html'), out, err) == 0
    assert err.getvalue() == ''
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f'{trace}: 45 events, 13 frames, wall time ')
    assert lines[1].split() == ['holder', 'kind', 'frames', 'p50', 'ms', 'p99', 'ms', 'max',
                                'ms', 'share', '%', 'missed']
    assert [line.split()[0] for line in lines[2:5]] == [name for name, _ in HOLDERS]
    assert lines[2].split()[:6] == ['/slow', 'participant', '10', '0.500', '20.000', '20.000']
    assert lines[-1] == f'report: {tmp_path / "report.html"}'
    page = Page((tmp_path / 'report.html').read_text())
    assert page.find('h1')[0].text == '/sim_clock frame timeline: run.json'
    assert format_holders(synthetic_run()) == '\n'.join(lines[1:5])


@pytest.mark.parametrize('content, reason', [
    (None, 'run.json: No such file or directory'),
    ('{"traceEvents": [', 'run.json: not JSON'),
    (json.dumps({'traceEvents': [{'ph': 'X', 'ts': 0}]}), 'run.json: not a sim_clock trace'),
])
def test_report_of_a_file_that_is_not_a_trace_exits_2_saying_why(tmp_path, content, reason):
    trace = tmp_path / 'run.json'
    if content is not None:
        trace.write_text(content)
    out, err = io.StringIO(), io.StringIO()
    assert report_command(str(trace), str(tmp_path / 'report.html'), out, err) == 2
    assert out.getvalue() == ''
    assert err.getvalue().startswith('cannot read the trace: ') and reason in err.getvalue()
    assert not (tmp_path / 'report.html').exists()


def test_frames_nobody_held_are_said_so_not_drawn():
    """No participant, gate or acknowledgement: a sentence, not bars of 0 ms on a 1 ns axis."""
    events = [FrameEvent(1, FRAME, 0, 10, 100, 100, count=1),
              FrameEvent(2, FRAME, 0, 20, 200, 200, count=1)]
    page = render_report(events, 'free run')
    assert 'No frame was held: no participant, output gate or wait for acknowledgements' in page
    assert 'id="timeline"' not in page and 'e-06 ms' not in page
