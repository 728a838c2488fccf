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
The report page as a browser shows it: headless Chromium (Debian's package) opens the file.

Its DOM, dumped after loading, must hold the table, the frames, the plot's points and the
resets as written; its screenshot must show the holders' colours. ``scripts/setup.sh --test``
installs Chromium; where it could not, these tests skip and say so.
"""

import subprocess

from browser import CHROMIUM
from browser import needs_chromium
from frame_timeline import FRAMES
from frame_timeline import HOLDERS
from frame_timeline import Page
from frame_timeline import RESETS
from frame_timeline import synthetic_run
from PIL import Image
import pytest
from sim_clock.client.report import PALETTE
from sim_clock.client.report import plot_window_ns
from sim_clock.client.report import render_report
from sim_clock.core.frame_stats import real_time_factor

#: A cold start of Chromium on a loaded two-core machine takes seconds; this bounds a hang.
BROWSER_TIMEOUT = 120
WIDTH, HEIGHT = 1280, 1600

pytestmark = [pytest.mark.process, needs_chromium]


def chromium(tmp_path, *arguments) -> subprocess.CompletedProcess:
    """Run headless Chromium with a profile of its own; fail with its output if it fails."""
    result = subprocess.run(
        [CHROMIUM, '--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars',
         f'--user-data-dir={tmp_path / "profile"}', *arguments],
        capture_output=True, text=True, timeout=BROWSER_TIMEOUT)
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope='module')
def report_file(tmp_path_factory):
    """Write the report of the synthetic run; return its path."""
    path = tmp_path_factory.mktemp('report') / 'report.html'
    path.write_text(render_report(synthetic_run(), 'a run'), encoding='utf-8')
    return path


def test_the_browser_renders_the_table_the_frames_the_points_and_the_resets(
        report_file, tmp_path):
    """--dump-dom: what Chromium built from the file, read element by element."""
    dom = Page(chromium(tmp_path, '--dump-dom', report_file.as_uri()).stdout)
    rows = dom.find('tr', within='holders', cls='holder')
    assert [(row.attrs['data-name'], row.attrs['data-kind']) for row in rows] == HOLDERS
    assert [cell.text for cell in rows[0].children if cell.tag == 'td'][4] == '20.000'
    assert len(dom.find('li', within='resets')) == RESETS
    assert len(dom.find('g', within='timeline', cls='frame')) == FRAMES
    events = synthetic_run()
    expected = len(real_time_factor(events, plot_window_ns(events)))
    assert len(dom.find('circle', within='rtf', cls='point')) == expected > 5
    assert dom.find('h1')[0].text == 'a run'


def test_the_screenshot_is_not_blank_and_shows_the_holders_colours(report_file, tmp_path):
    """--screenshot: a 1280x1600 picture with text, the slowest holder's red and the plot."""
    picture = tmp_path / 'report.png'
    chromium(tmp_path, f'--screenshot={picture}', f'--window-size={WIDTH},{HEIGHT}',
             report_file.as_uri())
    with Image.open(picture) as image:
        assert image.size == (WIDTH, HEIGHT)
        counts = {colour: count
                  for count, colour in image.convert('RGB').getcolors(WIDTH * HEIGHT)}
    white = counts.get((255, 255, 255), 0)
    assert white < WIDTH * HEIGHT * 0.97, 'the page is (nearly) blank'
    assert len(counts) > 50, 'no text or drawing: too few colours'

    def pixels(hex_colour: str) -> int:
        rgb = tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
        return counts.get(rgb, 0)
    # The bars of the slowest holder (/slow, the palette's first colour) and of the second
    # (/cmd), solid fills: hundreds of pixels each in the timeline.
    assert pixels(PALETTE[0]) > 500 and pixels(PALETTE[1]) > 300, (pixels(PALETTE[0]),
                                                                   pixels(PALETTE[1]))
