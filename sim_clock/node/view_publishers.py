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
Clock views on the node: each view of ``core/views.py`` published on ``/<view>/clock``.

The views come from a YAML file named by the read-only parameter ``clock_views_file``
(``config/clock_views.yaml`` is an example). :class:`ClockViews` wraps the server's frame sink:
after each window of frames' own publishing, every view publishes those frames' times as it
sees them; idle republishing too. Stepped view frames are flow-controlled like /clock (a
view's reader that keeps every frame gets them all, and a full history never blocks a
publish). Each view's drift counts from the start of the timeline's epoch, so a reset starts
it again with nothing to follow.
"""

from typing import Callable
from typing import List

from rcl_interfaces.msg import ParameterDescriptor
from rosgraph_msgs.msg import Clock as ClockMsg
from sim_clock.core.axes import Axes
from sim_clock.core.rules import Refused
from sim_clock.core.timeline import Timeline
from sim_clock.core.views import parse_views
from sim_clock.core.views import View
from sim_clock.node.flow_control import FlowControl
from sim_clock.node.flow_control import MAX_WINDOW
from sim_clock.node.publishing import clock_publisher
from sim_clock.node.publishing import pinned
from sim_clock.node.publishing import publisher_destroyed
from sim_clock.wire.names import CLOCK_QOS
from sim_clock.wire.names import CLOCK_TOPIC
import yaml

VIEWS_PARAMETER = 'clock_views_file'
VIEWS_DESCRIPTOR = ParameterDescriptor(
    description='YAML file of clock views ({views: {name: {offset: s, drift_ppm: ppm}}}), each '
                "published on /<name>/clock; '' none. Read at start.",
    additional_constraints='a readable YAML file, or empty', read_only=True)


def load_views(path: str) -> List[View]:
    """Return the views of the YAML file at ``path`` ('' none); refuse a bad file."""
    if not path:
        return []
    try:
        with open(path) as views_file:
            document = yaml.safe_load(views_file) or {}
    except (OSError, yaml.YAMLError) as error:
        raise Refused(f'{VIEWS_PARAMETER} {path!r} cannot be read: {error}') from None
    if not isinstance(document, dict) or set(document) - {'views'}:
        raise Refused(f'{VIEWS_PARAMETER} {path!r} must hold one key, views, got {document!r}')
    return parse_views(document.get('views') or {})


def declare_views(node) -> List[View]:
    """Declare ``clock_views_file`` on ``node``; return the views of the file it names."""
    return load_views(node.declare_parameter(VIEWS_PARAMETER, '', VIEWS_DESCRIPTOR).value)


class ClockViews:
    """
    The ``views`` on their topics: their publishers, and the wrapper of the node's sink.

    ``create_publisher``: the node's (``Node.create_publisher``); ``flow``: the node's flow
    control, which gives the views' writers their budgets; ``timeline``: where the epoch
    started; ``axes``: timeline time to /clock time.
    """

    def __init__(self, views: List[View], create_publisher: Callable, flow: FlowControl,
                 timeline: Timeline, axes: Axes):
        self.views = list(views)
        self._timeline = timeline
        self._to_clock = axes.to_clock
        self._publishers = [create_publisher(ClockMsg, view.topic, CLOCK_QOS)
                            for view in self.views]
        self._publish = [clock_publisher(publisher) for publisher in self._publishers]
        #: The views' writers, pinned while their frames go out through their addresses.
        self._pinned = pinned(self._publishers)
        # Stepped view frames are flow-controlled as /clock's are, by the node's one owner
        # (node/flow_control.py): a window's wait for /clock waits for the views too.
        self._flow = flow.writers(self._publishers)

    @property
    def topics(self) -> tuple:
        """Return /clock and the views' topics: where one clock source is expected each."""
        return (CLOCK_TOPIC, *(view.topic for view in self.views))

    def describe(self) -> List[str]:
        """Return each view in words, for ~/get_status."""
        return [view.describe() for view in self.views]

    def wrap(self, sink):
        """Return ``sink``, with every view published after each of its frames (if any)."""
        return _ViewSink(sink, self) if self.views else sink

    def room(self) -> int:
        """Return how many frames every view may publish before a wait for its readers."""
        return self._flow.room(MAX_WINDOW)

    def publish(self, times) -> None:
        """Publish each view at each of ``times`` (timeline times), a window at a time."""
        clock_ns = self._to_clock
        start = clock_ns(self._timeline.epoch_start_ns)
        with self._pinned:
            for index, (view, publish) in enumerate(zip(self.views, self._publish)):
                def publish_view(time_ns, view=view, publish=publish):
                    publish(view.time_ns(clock_ns(time_ns), start))
                self._flow.publish(index, publish_view, times)

    def close(self) -> None:
        """From now on a publish raises: the node destroys the publishers next."""
        self._publish = [publisher_destroyed] * len(self._publish)

    def publishers(self) -> list:
        """Return the views' publishers."""
        return list(self._publishers)


class _ViewSink:
    """A frame sink that publishes the views after what the sink it wraps publishes."""

    def __init__(self, sink, views: ClockViews):
        self._sink = sink
        self._views = views

    def publish_frames(self, frames: range, clock_times=None) -> None:
        if clock_times is not None:
            # Capped free run (flow control lifted): the views follow the frames on /clock.
            self._sink.publish_frames(frames, clock_times)
            self._views.publish(clock_times)
            return
        # A window at a time, the views' just after its /clock: each frame's times go out
        # together. A window ends where the views' budgets run out. /clock spends one sample
        # a frame as each view does (and has as much left or more: the views' idle
        # republishes spend theirs too), so it runs out at the end of that window or within
        # the next, with the views spent: the node's one FlowControl refills /clock and every
        # view in one wait.
        start = 0
        while start < len(frames):
            window = frames[start:start + self._views.room()]
            self._sink.publish_frames(window)
            self._views.publish(window)
            start += len(window)

    def publish_time(self, time_ns: int) -> None:
        self._sink.publish_time(time_ns)
        self._views.publish((time_ns,))

    def publishers(self) -> list:
        return self._sink.publishers() + self._views.publishers()

    @property
    def ends_frames(self) -> bool:
        return self._sink.ends_frames

    def end_of_frames(self):
        return self._sink.end_of_frames()

    def limit(self, limit: int) -> int:
        return self._sink.limit(limit)

    def empty_frames(self) -> int:
        return self._sink.empty_frames()

    def close(self) -> None:
        self._views.close()
        self._sink.close()
