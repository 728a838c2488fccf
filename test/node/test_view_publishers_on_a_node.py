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
ClockViews on a node: the views file, each view published after the frames it wraps, resets.

A real node of the test's context (the server's few methods are fakes of ours) publishes; a
reader node in the same process takes each view's /clock. Time free-runs (no flow control).
"""

from node_doubles import MS
from node_doubles import SECOND
from node_doubles import ServerNode
from node_doubles import spin_until
import pytest
from rclpy.node import Node
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock
from sim_clock.core.axes import Axes
from sim_clock.core.rules import Refused
from sim_clock.core.timeline import Timeline
from sim_clock.node.flow_control import MAX_WINDOW
from sim_clock.node.flow_control import PublisherDestroyed
from sim_clock.node.view_publishers import ClockViews
from sim_clock.node.view_publishers import declare_views
from sim_clock.node.view_publishers import load_views
from sim_clock.wire.names import CLOCK_QOS

pytestmark = pytest.mark.dds

OFFSET_NS = 100 * SECOND
VIEWS = 'views:\n  fast: {offset: 0.5, drift_ppm: 100000}\n  late: {offset: -2}\n'


class Sink:
    """The sink the views wrap: each run of frames and each time, in order."""

    ends_frames = True

    def __init__(self):
        self.calls = []
        self.closed = False

    def publish_frames(self, frames) -> None:
        """Record a run of frames."""
        self.calls.append(('frames', len(frames), frames[0]))

    def publish_time(self, time_ns: int) -> None:
        """Record a time published again."""
        self.calls.append(('time', time_ns))

    def publishers(self) -> list:
        """Return its own publisher."""
        return ['clock publisher']

    def limit(self, limit: int) -> int:
        """Return a boundary of its own."""
        return min(limit, 7)

    def end_of_frames(self):
        """Return what it leaves to do at the end."""
        return 'the end'

    def close(self) -> None:
        """Note the close."""
        self.closed = True


def views_of(server: ServerNode) -> ClockViews:
    """Return the views the server's clock_views_file names, wired as the server wires them."""
    return ClockViews(declare_views(server), server.create_publisher, server.flow,
                      server.timeline, server.axes)


def views_file(tmp_path, text: str = VIEWS) -> str:
    """Write a views file; return its path."""
    path = tmp_path / 'views.yaml'
    path.write_text(text)
    return str(path)


def server_with(context, path: str) -> ServerNode:
    """Return a free-running server node whose clock_views_file is ``path``."""
    return ServerNode(context, timeline=Timeline(), axes=Axes(clock_offset_ns=OFFSET_NS),
                      parameter_overrides=[Parameter('clock_views_file', value=path)])


class Reader:
    """A node that takes every message on the views' topics, by topic."""

    def __init__(self, context, topics):
        self.node = Node('view_reader', context=context)
        self.got = {topic: [] for topic in topics}
        for topic in topics:
            self.node.create_subscription(
                Clock, topic, lambda msg, topic=topic: self.got[topic].append(
                    msg.clock.sec * SECOND + msg.clock.nanosec), CLOCK_QOS)


def test_load_views_reads_the_file_or_refuses_saying_why(tmp_path):
    """'' is none; a good file gives its views; a missing or bad one is refused, named."""
    assert load_views('') == []
    views = load_views(views_file(tmp_path))
    assert [(view.name, view.offset_ns) for view in views] == [
        ('fast', SECOND // 2), ('late', -2 * SECOND)]
    with pytest.raises(Refused, match='clock_views_file .* cannot be read'):
        load_views(str(tmp_path / 'missing.yaml'))
    with pytest.raises(Refused, match='must hold one key, views'):
        load_views(views_file(tmp_path, 'views: {}\nother: 1\n'))
    with pytest.raises(Refused, match='must hold one key, views'):
        load_views(views_file(tmp_path, '- a list\n'))
    with pytest.raises(Refused, match='cannot be read'):
        load_views(views_file(tmp_path, 'views: [unclosed\n'))
    assert load_views(views_file(tmp_path, '')) == []


def test_without_views_the_sink_is_left_as_it_is(context):
    """No views file: the sink is not wrapped; /clock is the only topic."""
    server = ServerNode(context, timeline=Timeline())
    views = views_of(server)
    sink = Sink()
    assert views.wrap(sink) is sink
    assert views.topics == ('/clock',) and views.describe() == []


def test_the_views_are_described_and_their_topics_named(context, tmp_path):
    """Each view on /<name>/clock, described for ~/get_status, publishers after the sink's."""
    views = views_of(server_with(context, views_file(tmp_path)))
    assert views.topics == ('/clock', '/fast/clock', '/late/clock')
    assert views.describe() == ['fast: offset 0.5 s, drift 100000 ppm, on /fast/clock',
                                'late: offset -2 s, drift 0 ppm, on /late/clock']
    sink = views.wrap(Sink())
    publishers = sink.publishers()
    assert publishers[0] == 'clock publisher'
    topics = [publisher.topic_name for publisher in publishers[1:]]
    assert topics == ['/fast/clock', '/late/clock']
    assert sink.limit(100) == 7 and sink.end_of_frames() == 'the end' and sink.ends_frames


def test_each_frame_goes_out_on_every_view_a_window_at_a_time(context, tmp_path):
    """The sink publishes a window, then the views publish it: each time as each view sees it."""
    server = server_with(context, views_file(tmp_path))
    views = views_of(server)
    inner = Sink()
    sink = views.wrap(inner)
    reader = Reader(context, ['/fast/clock', '/late/clock'])
    spin_until([server, reader.node],
               lambda: all(server.count_subscribers(t) for t in reader.got))
    count = 2 * MAX_WINDOW + 1
    frames = range(10 * MS, (count + 1) * 10 * MS, 10 * MS)
    sink.publish_frames(frames)
    assert inner.calls == [('frames', MAX_WINDOW, 10 * MS),
                           ('frames', MAX_WINDOW, (MAX_WINDOW + 1) * 10 * MS),
                           ('frames', 1, count * 10 * MS)]
    spin_until([server, reader.node], lambda: all(len(got) >= count
                                                  for got in reader.got.values()))
    # The view's drift counts from the epoch's start (time 0): 10 % of the time elapsed.
    assert reader.got['/fast/clock'] == [
        OFFSET_NS + t + SECOND // 2 + t // 10 for t in frames]
    assert reader.got['/late/clock'] == [OFFSET_NS + t - 2 * SECOND for t in frames]


def test_a_reset_starts_every_views_drift_again(context, tmp_path):
    """After a seek to 10 s the drift counts from 10 s; a time published again goes out too."""
    server = server_with(context, views_file(tmp_path))
    views = views_of(server)
    inner = Sink()
    sink = views.wrap(inner)
    reader = Reader(context, ['/fast/clock'])
    spin_until([server, reader.node], lambda: server.count_subscribers('/fast/clock'))
    sink.publish_time(SECOND)
    server.timeline.seek(10 * SECOND)
    server.dispatch()
    sink.publish_time(11 * SECOND)
    assert inner.calls == [('time', SECOND), ('time', 11 * SECOND)]
    spin_until([server, reader.node], lambda: len(reader.got['/fast/clock']) >= 2)
    assert reader.got['/fast/clock'] == [OFFSET_NS + SECOND + SECOND // 2 + SECOND // 10,
                                         OFFSET_NS + 11 * SECOND + SECOND // 2 + SECOND // 10]


def test_after_close_a_publish_raises(context, tmp_path):
    """Closed (the node is being destroyed): the wrapped sink is closed; publishing raises."""
    views = views_of(server_with(context, views_file(tmp_path)))
    inner = Sink()
    views.wrap(inner).close()
    assert inner.closed
    with pytest.raises(PublisherDestroyed):
        views.publish((SECOND,))
