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
Frames to messages: /clock serialized once and published raw, in C where rclpy lays it out so.

A frame sink (``engine.parts.FrameSink``) is what the server tells each frame to publish;
:class:`ClockSink`
publishes /clock only, and the bag player's sink publishes the bag's messages before each
frame's /clock (``sim_clock.bag.player``).
"""

import copy
from dataclasses import dataclass
import functools
import struct
from typing import Callable
from typing import Optional
from typing import Sequence
from typing import Union

from rcl_interfaces.msg import SetParametersResult
from rclpy.qos import QoSPolicyKind
from rclpy.qos_overriding_options import QoSOverridingOptions
from rclpy.serialization import serialize_message
from rosgraph_msgs.msg import Clock as ClockMsg
from sim_clock import _replay
from sim_clock.compat import PinnedHandle
from sim_clock.compat import PinnedHandles
from sim_clock.compat import publisher_address
from sim_clock.compat import raw_publish
from sim_clock.core.axes import Axes
from sim_clock.core.settings import Core
from sim_clock.core.units import split_ns
from sim_clock.node.acks import Acknowledgements
from sim_clock.node.engine.parts import Logger
from sim_clock.node.flow_control import FlowControl
from sim_clock.node.flow_control import PublisherDestroyed
from sim_clock.wire.names import CLOCK_QOS
from sim_clock.wire.names import CLOCK_TOPIC


#: The encapsulation header of CDR, little-endian: what sim_clock._replay writes.
CDR_LITTLE_ENDIAN = b'\x00\x01\x00\x00'
_CLOCK_LAYOUT = struct.Struct('<4siI')


#: The /clock history a ``qos_overrides./clock.publisher.depth`` parameter may set.
MAX_CLOCK_DEPTH = 100_000


def create_clock_publisher(node):
    """
    Create ``node``'s /clock publisher: ``CLOCK_QOS``, its depth overridable at start.

    ROS's read-only ``qos_overrides./clock.publisher.depth`` parameter (1 to
    :data:`MAX_CLOCK_DEPTH`, default 10000). Depth 1 makes Fast DDS send a heartbeat with every
    /clock sample (a full history does), so readers acknowledge it at once: an acknowledged
    step answers about 0.5 ms sooner, and stepped frames wait for their acknowledgement one by
    one (flow control's window is then 1). doc/design.md, "/clock QoS".
    """
    qos = copy.copy(CLOCK_QOS)  # rclpy writes the overridden depth into the profile it gets
    options = QoSOverridingOptions([QoSPolicyKind.DEPTH], callback=_check_clock_qos)
    return node.create_publisher(ClockMsg, CLOCK_TOPIC, qos, qos_overriding_options=options)


def _check_clock_qos(qos) -> SetParametersResult:
    if not 1 <= qos.depth <= MAX_CLOCK_DEPTH:
        return SetParametersResult(
            successful=False,
            reason=f'the /clock depth must be between 1 and {MAX_CLOCK_DEPTH}, got {qos.depth}')
    return SetParametersResult(successful=True)


@dataclass
class SinkParts:
    """What the node gives the frame sink it is made with, each by its interface."""

    #: The time core: the timeline, whether frames are held, the data's position at a reset.
    core: Core
    #: Timeline time to /clock time, and to a bag's time.
    axes: Axes
    logger: Logger
    #: The node's ``create_publisher`` (rclpy's signature).
    create_publisher: Callable
    #: The node's /clock publisher (:func:`create_clock_publisher`).
    clock_publisher: object
    #: The node's one flow control: each sink's writers take their budgets of it.
    flow: FlowControl
    #: The node's acknowledgement waits.
    acks: Acknowledgements


@functools.lru_cache(maxsize=None)
def clock_header() -> Optional[bytes]:
    """
    Return the header of rclpy's serialization of a Clock, or None if it is laid out otherwise.

    The layout expected: a 4-byte encapsulation header, sec (int32), nanosec (uint32), both
    little-endian; checked once, on a sample, against rclpy's own serialization.
    """
    sample = ClockMsg()
    sample.clock.sec, sample.clock.nanosec = 1_234_567_890, 987_654_321
    expected = serialize_message(sample)
    header = expected[:4]
    if _CLOCK_LAYOUT.pack(header, sample.clock.sec, sample.clock.nanosec) == expected:
        return header
    return None


def clock_in_c() -> bool:
    """Whether rclpy serializes a Clock as sim_clock._replay does (little-endian CDR)."""
    return clock_header() == CDR_LITTLE_ENDIAN


def clock_publisher(publisher, offset_ns: int = 0) -> Callable[[int], None]:
    """
    Return a function that publishes a time in ns, plus ``offset_ns``, on ``publisher`` (of Clock).

    12 bytes of CDR published raw by ``sim_clock._replay.publish_clock`` in C (a tenth of the
    cost of ``Publisher.publish``); ``handle.publish_raw`` with the same bytes for a publisher
    without an rcl address; a message as ``Publisher.publish`` sends it if rclpy lays a Clock
    out otherwise. The C function holds the publisher's address: call it inside
    :func:`pinned` (the publisher outlives the call), and replace it (with
    :func:`publisher_destroyed`) before the publisher is destroyed.
    """
    header = clock_header()
    if header is not None:
        pointer = publisher_address(publisher)
        if pointer and clock_in_c():
            return functools.partial(_replay.publish_clock, pointer, offset_ns)
        publish_raw = raw_publish(publisher)
        pack = _CLOCK_LAYOUT.pack

        def publish_clock(time_ns: int) -> None:
            publish_raw(pack(header, *split_ns(time_ns + offset_ns)))
        return publish_clock

    msg = ClockMsg()

    def publish_clock_msg(time_ns: int) -> None:
        msg.clock.sec, msg.clock.nanosec = split_ns(time_ns + offset_ns)
        publisher.publish(msg)
    return publish_clock_msg


def pinned(publishers) -> Union[PinnedHandle, PinnedHandles]:
    """
    Pin ``publishers`` while frames are published through their addresses (:class:`PinnedHandles`).

    One already destroyed raises :class:`PublisherDestroyed`. Made once per sink and entered
    for each batch of frames (a single publisher's in fewer steps: :class:`PinnedHandle`).
    """
    publishers = tuple(publishers)
    if len(publishers) == 1:
        return PinnedHandle(publishers[0], _destroyed)
    return PinnedHandles(publishers, _destroyed)


def _destroyed() -> PublisherDestroyed:
    return PublisherDestroyed('the node is destroyed; its publishers are gone')


def publisher_destroyed(*args) -> None:
    """Stand in for a publish function whose publisher is destroyed: raise PublisherDestroyed."""
    raise PublisherDestroyed('the node is destroyed; its publishers are gone')


class ClockSink:
    """
    Publish each frame's /clock, ``offset_ns`` after the timeline's time, on ``publisher``.

    ``flow``: the node's flow control (``node/flow_control.py``), which gives /clock its budget.
    """

    #: /clock alone leaves nothing to do at the end of its frames.
    ends_frames = False

    def __init__(self, publisher, flow, offset_ns: int = 0):
        self._publisher = publisher
        self._pinned = pinned((self._publisher,))
        self._publish_clock = clock_publisher(self._publisher, offset_ns)
        self._flow = flow.writers([self._publisher])

    def publish_frames(self, frames: range,
                       clock_times: Optional[Sequence[int]] = None) -> None:
        """Publish each frame's /clock (those of ``clock_times`` if given): the hot path."""
        with self._pinned:
            self._flow.publish(0, self._publish_clock,
                               frames if clock_times is None else clock_times)

    def publish_time(self, time_ns: int) -> None:
        """Publish /clock at ``time_ns``."""
        with self._pinned:
            self._publish_clock(time_ns)

    def end_of_frames(self) -> None:
        """Return what the frames out leave to do at their end: nothing (/clock only)."""
        return None

    def limit(self, limit: int) -> int:
        """Return ``limit``: /clock alone has no boundary."""
        return limit

    def empty_frames(self) -> int:
        """Return 0: /clock alone knows of no data."""
        return 0

    def publishers(self) -> list:
        """Return the /clock publisher."""
        return [self._publisher]

    def close(self) -> None:
        """From now on a publish raises instead of using a freed publisher."""
        self._publish_clock = publisher_destroyed
