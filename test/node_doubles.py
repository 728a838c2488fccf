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
Small fakes of the clock server's own parts, around a real rclpy node, for test/node/.

:class:`ServerNode` is a real node of the test's context that offers the few methods of
``ClockServer`` that the node's parts call (the timeline, /clock times, change listeners, the
parts of the waits with the engine's release, ...), each a fake that records; :class:`Logger`
records the lines logged.
"""

import time
from typing import Callable
from typing import List

from rclpy.clock import Clock
from rclpy.clock import ClockType
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from sim_clock.core.axes import Axes
from sim_clock.core.pacing import Pacing
from sim_clock.core.settings import Core
from sim_clock.core.timeline import Timeline
from sim_clock.node.acks import Acknowledgements
from sim_clock.node.engine.parts import WaitParts
from sim_clock.node.flow_control import FlowControl

MS = 1_000_000
SECOND = 1_000 * MS
#: How long a test waits for something to come through DDS within the process, in s.
WAIT_S = 10.0


class Logger:
    """The lines logged, each as (level, text)."""

    def __init__(self):
        self.lines = []

    def debug(self, message, **kwargs):
        """Record a DEBUG line."""
        self.lines.append(('debug', message))

    def info(self, message, **kwargs):
        """Record an INFO line."""
        self.lines.append(('info', message))

    def warning(self, message, **kwargs):
        """Record a WARN line."""
        self.lines.append(('warning', message))

    def error(self, message, **kwargs):
        """Record an ERROR line."""
        self.lines.append(('error', message))

    def at(self, level: str) -> List[str]:
        """Return the lines logged at ``level``, in order."""
        return [text for logged, text in self.lines if logged == level]


class Engine:
    """The frame engine as the parts see it: how often a wait was released to it."""

    def __init__(self):
        self.releases = 0

    def released(self) -> None:
        """Count a release (registered with the parts as the engine registers its own)."""
        self.releases += 1


class Expected:
    """The expected participants as the participants' part sees them: what it forgot."""

    def __init__(self):
        self.forgotten = []

    def forget(self, *names: str) -> None:
        """Record the names forgotten."""
        self.forgotten.append(names)


class FrameEvents:
    """The frame timeline as the parts see it: each call, in order."""

    def __init__(self):
        self.calls = []

    def done(self, epoch, time_ns, since_ns, now_ns, name, round_=0, success=True):
        """Record a participant's done."""
        self.calls.append(('done', name, time_ns, round_))

    def gate(self, epoch, time_ns, since_ns, now_ns, topic):
        """Record a gated output."""
        self.calls.append(('gate', topic, time_ns))


class ServerNode(Node):
    """
    A real rclpy node with the methods of ``ClockServer`` the node's parts call, as fakes.

    ``timeline``: a real time core (sync mode by default); ``axes``: /clock's offset.
    """

    def __init__(self, context, name: str = 'sim_clock', timeline: Timeline = None,
                 axes: Axes = Axes(), **kwargs):
        super().__init__(name, context=context, **kwargs)
        #: The time core, as the server's: its change dispatch follows resets (the hold).
        self.core = Core(timeline or Timeline(sync=True), Pacing(10 * MS))
        self.timeline = self.core.timeline
        self.axes = axes
        self.steady_clock = Clock(clock_type=ClockType.STEADY_TIME)
        self.engine = Engine()
        self.expected = Expected()
        self.frame_timeline = FrameEvents()
        self.acks = Acknowledgements()
        self.log = Logger()
        #: The node's one flow-control owner, as the server's: the views take their writers.
        self.flow = FlowControl(self.timeline, self.acks, self.log, self.context.ok)
        self.listeners: List[Callable] = []
        self.applies = False

    def get_logger(self):
        """Return the recording logger (the parts log through it)."""
        return self.log

    def clock_ns(self, time_ns: int) -> int:
        """Return the /clock time of timeline time ``time_ns``."""
        return self.axes.to_clock(time_ns)

    def clock_now(self) -> int:
        """Return the /clock time now."""
        return self.clock_ns(self.timeline.time_ns)

    def add_change_listener(self, listener: Callable) -> None:
        """Hand ``listener`` the changes :meth:`dispatch` announces."""
        self.listeners.append(listener)

    def dispatch(self) -> list:
        """Hand every listener the core's changes since the last call; return them."""
        changes = self.core.take_changes(time.monotonic_ns(), self.clock_ns)
        for change in changes:
            for listener in self.listeners:
                listener(change)
        self.flow.after_changes(changes)  # as the server's, after each dispatch
        return changes

    def waits(self) -> WaitParts:
        """Return the parts the participants and the output gates are given, as the server's."""
        return WaitParts(self, self.timeline, self.axes, self.frame_timeline, self.expected,
                         self.steady_clock)

    def holds_frames(self) -> bool:
        """Return whether frames wait for participants now (as the test set it)."""
        return self.applies


def spin_until(nodes, condition: Callable[[], bool], timeout_s: float = WAIT_S) -> None:
    """Spin ``nodes`` until ``condition()`` holds; fail after ``timeout_s``."""
    executor = SingleThreadedExecutor(context=nodes[0].context)
    for node in nodes:
        executor.add_node(node)
    try:
        deadline = time.monotonic() + timeout_s
        while not condition():
            assert time.monotonic() < deadline, f'timed out after {timeout_s} s'
            executor.spin_once(timeout_sec=0.05)
    finally:
        for node in nodes:
            executor.remove_node(node)
        executor.shutdown()


def spin_for(nodes, seconds: float) -> None:
    """Spin ``nodes`` for ``seconds`` (to see that nothing comes)."""
    end = time.monotonic() + seconds
    spin_until(nodes, lambda: time.monotonic() >= end, seconds + WAIT_S)
