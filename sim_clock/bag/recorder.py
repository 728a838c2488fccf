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
Recording in simulated time: chosen topics, raw, into an MCAP bag stamped with ``/clock``.

Each message is written with the ``/clock`` published last before it (what
``ros2 bag record --use-sim-time`` means to do), never with wall time. Messages that come before
any ``/clock`` are counted and left out. Topics are subscribed once a publisher shows their type,
with a QoS that matches every publisher (reliable and transient local only if all are). At the
end (Ctrl-C, SIGTERM, or ``--until`` simulated seconds) the bag is closed and a summary printed:
messages per topic and the simulated time span.
"""

from bisect import bisect_right
from dataclasses import dataclass
import os
import sys
from typing import Dict
from typing import List
from typing import Optional
from typing import Tuple

from ament_index_python.packages import get_package_share_directory
from ament_index_python.packages import PackageNotFoundError
import rclpy
from rclpy.clock import Clock
from rclpy.clock import ClockType
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rclpy.utilities import remove_ros_args
from rosbags.interfaces import Qos
from rosbags.interfaces import QosDurability
from rosbags.interfaces import QosHistory
from rosbags.interfaces import QosLiveliness
from rosbags.interfaces import QosReliability
from rosbags.interfaces import QosTime
from rosbags.rosbag2 import StoragePlugin
from rosbags.rosbag2 import Writer
from rosbags.rosbag2 import WriterError
from rosbags.typesys import get_types_from_msg
from rosbags.typesys import get_typestore
from rosbags.typesys import Stores
from rosbags.typesys import TypesysError
from rosgraph_msgs.msg import Clock as ClockMsg
from sim_clock.bag.reader import get_message
from sim_clock.bag.record_options import is_recorded_by_all
from sim_clock.bag.record_options import parse_arguments
from sim_clock.core.units import format_seconds
from sim_clock.core.units import join_ns
from sim_clock.names import CLOCK_QOS
from sim_clock.names import CLOCK_TOPIC
from sim_clock.names import DEFAULT_SERVER
from sim_clock.names import RECORDER_NODE_NAME as NODE_NAME
from sim_clock.node.runtime import spin_until_stopped
#: How often the graph is looked at for the publishers of topics not yet recorded, in s.
DISCOVERY_PERIOD = 0.2
#: Subscriber history: a lockstep step may deliver a burst on one topic.
RECORD_DEPTH = 1000
#: /clock source timestamps kept to stamp late messages by (10000 to 20000 frames).
CLOCK_HISTORY = 10_000
_ZERO = QosTime(0, 0)


def message_definition(typestore, type_name: str) -> str:
    """
    Return the ``.msg`` text of a type for the bag, or '' if unknown.

    rosbags knows the standard Jazzy types; others are read from the package's installed
    ``share/<package>/msg/<Name>.msg`` (nested types of other packages must be known too).
    """
    if type_name not in typestore.types:
        package, _, name = type_name.split('/')
        try:
            path = os.path.join(get_package_share_directory(package), 'msg', name + '.msg')
            with open(path) as definition:
                typestore.register(get_types_from_msg(definition.read(), type_name))
        except (PackageNotFoundError, OSError, TypesysError, ValueError):
            return ''
    try:
        return typestore.generate_msgdef(type_name, ros_version=2)[0]
    except (KeyError, TypesysError):
        return ''


def offered_qos(profile: QoSProfile) -> Qos:
    """Return an rclpy profile as rosbags stores it in the bag's metadata."""
    return Qos(
        history=QosHistory(int(profile.history)), depth=profile.depth,
        reliability=QosReliability(int(profile.reliability)),
        durability=QosDurability(int(profile.durability)),
        deadline=_ZERO, lifespan=_ZERO, liveliness=QosLiveliness(int(profile.liveliness)),
        liveliness_lease_duration=_ZERO, avoid_ros_namespace_conventions=False)


def subscription_qos(profiles: List[QoSProfile]) -> QoSProfile:
    """Return a QoS that matches every one of the publishers' ``profiles``."""
    reliable = all(p.reliability == ReliabilityPolicy.RELIABLE for p in profiles)
    transient = all(p.durability == DurabilityPolicy.TRANSIENT_LOCAL for p in profiles)
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST, depth=RECORD_DEPTH,
        reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if transient else DurabilityPolicy.VOLATILE)


@dataclass
class TopicCount:
    """Messages recorded on one topic, with the first and last timestamps."""

    type_name: str
    count: int = 0
    first_ns: Optional[int] = None
    last_ns: Optional[int] = None


class RecordingSummary:
    """What a recording holds: messages per topic, the time span, and what was left out."""

    def __init__(self):
        self.topics: Dict[str, TopicCount] = {}
        self.before_clock = 0
        self.after_end = 0
        self.time_jumps_back = 0
        self._last_clock_ns: Optional[int] = None

    def clock(self, time_ns: int) -> None:
        """Note a /clock value; count the times it went back (a reset, seek or loop)."""
        if self._last_clock_ns is not None and time_ns < self._last_clock_ns:
            self.time_jumps_back += 1
        self._last_clock_ns = time_ns

    def add_topic(self, topic: str, type_name: str) -> None:
        """Note that a topic is recorded (it is listed even if no message comes)."""
        self.topics.setdefault(topic, TopicCount(type_name))

    def message(self, topic: str, time_ns: int) -> None:
        """Note a message written at ``time_ns``."""
        entry = self.topics[topic]
        entry.count += 1
        if entry.first_ns is None or time_ns < entry.first_ns:
            entry.first_ns = time_ns
        if entry.last_ns is None or time_ns > entry.last_ns:
            entry.last_ns = time_ns

    @property
    def total(self) -> int:
        """Return the messages recorded, all topics."""
        return sum(entry.count for entry in self.topics.values())

    def span(self) -> Optional[Tuple[int, int]]:
        """Return (first, last) simulated time of the messages recorded, or None."""
        firsts = [e.first_ns for e in self.topics.values() if e.first_ns is not None]
        lasts = [e.last_ns for e in self.topics.values() if e.last_ns is not None]
        return (min(firsts), max(lasts)) if firsts else None

    def lines(self, path: str) -> List[str]:
        """Return the summary as text lines."""
        lines = [f'recorded {self.total} messages into {path}']
        span = self.span()
        if span:
            lines.append(
                f'simulated time span: {format_seconds(span[0])} s to {format_seconds(span[1])} s '
                f'({format_seconds(span[1] - span[0])} s)')
        width = max((len(name) for name in self.topics), default=0)
        for name in sorted(self.topics):
            entry = self.topics[name]
            lines.append(f'  {name:<{width}}  {entry.count:>9}  {entry.type_name}')
        if self.before_clock:
            lines.append(f'{self.before_clock} messages came before any /clock and were not '
                         'recorded')
        if self.after_end:
            lines.append(f'{self.after_end} messages were published at or after --until and '
                         'were not recorded')
        if self.time_jumps_back:
            lines.append(f'simulated time went back {self.time_jumps_back} times (resets): '
                         'the bag holds several passes')
        return lines


class Recorder(Node):
    """
    Record topics raw into an open rosbags writer, stamped with simulated time.

    A message gets the /clock that was published last before it: the one with the latest
    source timestamp (the publisher's wall clock, carried by DDS) at or before the message's.
    Order of arrival would not do: a recorder that falls behind takes the messages of each
    subscription in turn, and would give data a /clock older than the one it came after. A
    message waits until a /clock published after it arrives (or the recording ends). Source
    timestamps of publishers on other hosts are only as close as the hosts' clocks.
    """

    def __init__(self, writer: Writer, topics: List[str], until_ns: Optional[int] = None,
                 *, all_topics: bool = False, server: str = DEFAULT_SERVER, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        self._writer = writer
        self._waiting = list(dict.fromkeys(topics))
        #: --all: every topic that appears is recorded but these (None: only those asked for).
        self._all_server = server if all_topics else None
        self._seen = set()
        self._until_ns = until_ns
        self._typestore = get_typestore(Stores.ROS2_JAZZY)
        self._skipped_types = set()
        self.summary = RecordingSummary()
        self.clock_ns: Optional[int] = None
        # Source timestamps and times of the /clock messages received, oldest first (the last
        # CLOCK_HISTORY to CLOCK_HISTORY * 2), and the messages waiting for a later /clock.
        self._clock_sources: List[int] = []
        self._clock_times: List[int] = []
        self._pending = []
        self._clock_trimmed = False
        #: The source timestamp of the /clock that reached --until (None: not reached).
        self._end_source: Optional[int] = None
        #: Callbacks run so far: lets the caller drain what is queued before closing.
        self.callbacks = 0
        self.create_subscription(ClockMsg, CLOCK_TOPIC, self._on_clock, CLOCK_QOS)
        self._timer = self.create_timer(
            DISCOVERY_PERIOD, self._discover, clock=Clock(clock_type=ClockType.STEADY_TIME))
        if all_topics:
            self.get_logger().info(
                f'recording every topic but {CLOCK_TOPIC}, clock views and those of {server} '
                f'(stamped with {CLOCK_TOPIC})')
        else:
            self.get_logger().info(
                f'waiting for publishers of {", ".join(self._waiting)} '
                f'(stamped with {CLOCK_TOPIC})')

    @property
    def done(self) -> bool:
        """Whether /clock reached --until: the recording ends."""
        return self._end_source is not None

    @property
    def waiting(self) -> List[str]:
        """Return the topics asked for whose publishers have not been seen."""
        return list(self._waiting)

    def _on_clock(self, msg, info) -> None:
        self.callbacks += 1
        if self._end_source is not None:
            return  # ended at --until: what comes after is not recorded
        if self.clock_ns is None:
            # Messages published before this /clock are not recorded: a caller that starts
            # the recorder and then drives time waits for this line first.
            self.get_logger().info(
                f'first {CLOCK_TOPIC} received ({join_ns(msg.clock)} ns): stamping from here on')
        self.clock_ns = join_ns(msg.clock)
        self.summary.clock(self.clock_ns)
        self._clock_sources.append(info['source_timestamp'])
        self._clock_times.append(self.clock_ns)
        if len(self._clock_times) > 2 * CLOCK_HISTORY:
            del self._clock_sources[:CLOCK_HISTORY]
            del self._clock_times[:CLOCK_HISTORY]
            self._clock_trimmed = True
        if self._pending:
            self._write_pending(info['source_timestamp'])
        if self._until_ns is not None and self.clock_ns >= self._until_ns:
            # The end: what was published before this /clock is recorded (stamped before
            # --until), what comes after it is not, however soon it arrives. So a lockstep
            # stack records the same messages run after run, whatever it publishes at the end.
            self._end_source = info['source_timestamp']

    def _write_pending(self, before: Optional[int]) -> None:
        """Write the waiting messages published before ``before`` (None: all of them)."""
        waiting = []
        for entry in self._pending:
            if before is None or entry[0] < before:
                self._write_stamped(*entry)
            else:
                waiting.append(entry)
        self._pending = waiting

    def _write_stamped(self, source: int, topic: str, connection, data: bytes) -> None:
        index = bisect_right(self._clock_sources, source)
        if index == 0 and not self._clock_trimmed:
            self.summary.before_clock += 1
            return
        # Older than the history kept: the oldest time kept.
        stamp = self._clock_times[max(index - 1, 0)]
        self._writer.write(connection, stamp, data)
        self.summary.message(topic, stamp)

    def spin_once(self, executor) -> None:
        """One round of the spin loop (see ``sim_clock.node.runtime.spin_until_stopped``)."""
        executor.spin_once(timeout_sec=0.1)

    def finish(self, executor) -> None:
        """
        End the recording: take what is queued still, then write what waits for a /clock.

        The queue is drained only while the context is up (it is after Ctrl-C or SIGTERM too:
        the runtime shuts it down after this). At --until, only what was published before the
        /clock that reached it is written.
        """
        if executor is not None and executor.context.ok():
            for _ in range(100):
                before = self.callbacks
                executor.spin_once(timeout_sec=0.0)
                if self.callbacks == before:
                    break
        self._write_pending(self._end_source)
        self.summary.after_end += len(self._pending)
        self._pending = []

    def _discover(self) -> None:
        if self._all_server is not None:
            for topic, type_names in self.get_topic_names_and_types():
                if topic in self._seen or not self.count_publishers(topic):
                    continue
                self._seen.add(topic)
                if all(is_recorded_by_all(topic, name, self._all_server) for name in type_names):
                    self._waiting.append(topic)
        for topic in list(self._waiting):
            infos = self.get_publishers_info_by_topic(topic)
            if not infos:
                continue
            type_names = sorted({info.topic_type for info in infos})
            if len(type_names) != 1:
                self._skip(topic, ' and '.join(type_names), 'several types on one topic')
                continue
            type_name = type_names[0]
            try:
                message_class = get_message(type_name)
            except LookupError as error:
                self._skip(topic, type_name, str(error))
                continue
            hashes = {bytes(info.topic_type_hash.value) for info in infos
                      if info.topic_type_hash.version == 1}
            rihs01 = (f'RIHS01_{hashes.pop().hex()}' if len(hashes) == 1
                      else self._typestore_hash(type_name))
            if not rihs01:
                self._skip(topic, type_name, 'its type hash is unknown')
                continue
            msgdef = message_definition(self._typestore, type_name)
            if not msgdef:
                self.get_logger().warning(
                    f'no message definition found for {type_name}: {topic} is recorded, '
                    'but tools that decode it need the type installed')
            profiles = [info.qos_profile for info in infos]
            connection = self._writer.add_connection(
                topic, type_name, msgdef=msgdef, rihs01=rihs01,
                offered_qos_profiles=[offered_qos(p) for p in profiles])
            self.summary.add_topic(topic, type_name)
            self._waiting.remove(topic)  # first: a stop may end create_subscription
            self.create_subscription(
                message_class, topic, self._writer_callback(topic, connection),
                subscription_qos(profiles), raw=True)
            self.get_logger().info(f'recording {topic} ({type_name})')

    def _typestore_hash(self, type_name: str) -> str:
        try:
            return self._typestore.hash_rihs01(type_name)
        except (KeyError, TypesysError):
            return ''

    def _skip(self, topic: str, type_name: str, reason: str) -> None:
        self._waiting.remove(topic)
        if type_name not in self._skipped_types:
            self._skipped_types.add(type_name)
            self.get_logger().warning(f'not recording {topic}: type {type_name}: {reason}')

    def _writer_callback(self, topic: str, connection):
        sources = self._clock_sources

        def callback(data: bytes, info) -> None:
            self.callbacks += 1
            source = info['source_timestamp']
            if sources and sources[-1] > source:
                # A /clock published after this message is in: its stamp is known.
                self._write_stamped(source, topic, connection, data)
            else:
                self._pending.append((source, topic, connection, data))
        return callback


def main(args=None) -> int:
    """Record until Ctrl-C, SIGTERM or --until; print the summary; return the exit code."""
    argv = sys.argv if args is None else args
    options = parse_arguments(remove_ros_args(argv)[1:])
    until_ns = options.until_ns
    if os.path.exists(options.output):
        rclpy.logging.get_logger(NODE_NAME).fatal(
            f'{options.output!r} exists already; give a new directory')
        return 1
    writer = Writer(options.output, version=9, storage_plugin=StoragePlugin.MCAP)
    try:
        writer.open()
    except (WriterError, OSError) as error:
        rclpy.logging.get_logger(NODE_NAME).fatal(
            f'cannot create {options.output!r}: {error}')
        return 1
    recorders = []

    def make_node() -> Recorder:
        recorders.append(Recorder(writer, options.topics, until_ns, all_topics=options.all,
                                  server=options.server))
        return recorders[0]
    try:
        return spin_until_stopped(make_node, argv, logger_name=NODE_NAME,
                                  executor_factory=SingleThreadedExecutor)
    finally:
        writer.close()
        for recorder in recorders:
            for line in recorder.summary.lines(options.output):
                print(line, flush=True)
            if recorder.waiting:
                print(f'not recorded (no publisher seen): {", ".join(recorder.waiting)}',
                      flush=True)
