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
Through DDS: ``test/system/test_clock_views.py``.
"""

from types import SimpleNamespace

from flow_doubles import make_owner
from flow_doubles import Writer
import pytest
from sim_clock.node.acks import Acknowledgements
from sim_clock.node.flow import MAX_WINDOW
from sim_clock.node.publishing import ClockSink
from sim_clock.node.views import ClockViews

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
    path = tmp_path / 'views.yaml'
    path.write_text('views:\n  r1: {offset: 0.25, drift_ppm: 50}\n  r2: {offset: 0, '
                    'drift_ppm: 0}\n')
    owner, logger = make_owner(acks=Acknowledgements(
        on_wait=lambda topics, *rest: waits.append(tuple(sorted(topics)))))
    server = owner._node
    server.timeline.time_ns = server.timeline.epoch_start_ns = 0
    server.flow = owner
    server.declare_parameter = lambda *args: SimpleNamespace(value=str(path))
    server.create_publisher = lambda message, topic, qos: _publisher(topic)
    server.add_change_listener = lambda listener: None
    server.clock_ns = lambda time_ns: time_ns
    server.clock_publisher = _publisher('/clock')
    return server, logger


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
    server, logger = _server(tmp_path, waits)
    views = ClockViews(server)
    sink = views.wrap(ClockSink(server))
    sink.publish_time(0)  # as at start: the views' republish is flow-controlled
    time_ns = 0
    for frames in steps:
        sink.publish_frames(range(time_ns + MS, time_ns + (frames + 1) * MS, MS))
        time_ns += frames * MS
    writers = [server.clock_publisher, *views.publishers()]
    assert [len(writer.sent) for writer in writers] == [1 + sum(steps)] * 3
    # A wait before each window of samples: the republish's, then the frames'.
    windows = -(-(1 + sum(steps)) // MAX_WINDOW)
    assert waits == [('/clock', '/r1/clock', '/r2/clock')] * windows
    assert logger.warnings == []
