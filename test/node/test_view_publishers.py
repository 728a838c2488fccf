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
/clock and the views under the node's one FlowControl, without DDS: one wait per window.

``ClockSink`` and ``ClockViews`` themselves, on writers that acknowledge at once; the views'
wrapper cuts its windows where the views' budgets run out, so /clock runs out with them.
Through DDS: ``test/scenarios/test_clock_views.py``.
"""

from types import SimpleNamespace

from flow_doubles import make_owner
from flow_doubles import Writer
import pytest
from sim_clock.core.axes import Axes
from sim_clock.node.acks import Acknowledgements
from sim_clock.node.flow_control import MAX_WINDOW
from sim_clock.node.publishing import ClockSink
from sim_clock.node.view_publishers import ClockViews
from sim_clock.node.view_publishers import load_views

pytestmark = pytest.mark.fast

MS = 1_000_000


class Handle:
    """A publisher's handle: no rcl address, raw bytes kept, held as rclpy's is."""

    pointer = 0

    def __init__(self, writer):
        self.publish_raw = writer.publish

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return None


def _server(tmp_path, waits):
    """Return /clock's publisher, the node's flow control, the views, and the logger."""
    path = tmp_path / 'views.yaml'
    path.write_text('views:\n  r1: {offset: 0.25, drift_ppm: 50}\n  r2: {offset: 0, '
                    'drift_ppm: 0}\n')
    timeline = SimpleNamespace(free_running=False, time_ns=0, epoch_start_ns=0)
    flow, logger = make_owner(timeline=timeline, acks=Acknowledgements(
        on_wait=lambda topics, *rest: waits.append(tuple(sorted(topics)))))
    views = ClockViews(load_views(str(path)), lambda message, topic, qos: _publisher(topic),
                       flow, timeline, Axes())
    return _publisher('/clock'), flow, views, logger


def _publisher(topic):
    writer = Writer()
    writer.topic_name = topic
    writer.handle = Handle(writer)
    return writer


@pytest.mark.parametrize('steps', [[2000], [300] * 10, [MAX_WINDOW + 1] * 3],
                         ids=['one step', 'steps across windows', 'a frame past a window'])
def test_clock_and_the_views_wait_once_per_window_of_stepped_frames(tmp_path, steps):
    """Every frame on /clock and each view; each wait is for all three, one per window."""
    waits = []
    clock, flow, views, logger = _server(tmp_path, waits)
    sink = views.wrap(ClockSink(clock, flow))
    sink.publish_time(0)  # as at start: the views' republish is flow-controlled
    time_ns = 0
    for frames in steps:
        sink.publish_frames(range(time_ns + MS, time_ns + (frames + 1) * MS, MS))
        time_ns += frames * MS
    writers = [clock, *views.publishers()]
    assert [len(writer.sent) for writer in writers] == [1 + sum(steps)] * 3
    # A wait before each window of samples: the republish's, then the frames'.
    windows = -(-(1 + sum(steps)) // MAX_WINDOW)
    assert waits == [('/clock', '/r1/clock', '/r2/clock')] * windows
    assert logger.warnings == []
