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
Recording in simulated time: chosen topics, raw, into a bag (MCAP or sqlite3) stamped with /clock.

Each message is written with the ``/clock`` published last before it (what
``ros2 bag record --use-sim-time`` means to do), never with wall time, and each frame's messages
in an order that depends on the messages alone (:mod:`.recorder_frame_order`), into files whose
names do not depend on the run (:mod:`.recorder_bag_file`): two runs of a deterministic stack
give the same bytes.
Messages that come before any ``/clock`` are counted and left out. A topic given with its type,
or whose type the graph shows (a subscriber), is subscribed at once; any other once a publisher
shows its type. The QoS matches every publisher (reliable and transient local only if all
are). At the end (Ctrl-C, SIGTERM, or ``--until`` simulated seconds) the bag is closed and a
summary printed: messages per topic and the simulated time span. At ``--until``, what the
server's Rounds announced for the frames before it is waited for first
(:mod:`.recorder_round_tally`).
"""

from dataclasses import dataclass
import os
import sys
import time
from typing import Dict
from typing import List
from typing import Optional
from typing import Tuple

import rclpy
from rclpy.clock import Clock
from rclpy.clock import ClockType
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rosbags.rosbag2 import WriterError
from rosbags.typesys import get_typestore
from rosbags.typesys import Stores
from rosgraph_msgs.msg import Clock as ClockMsg
from sim_clock.bag.recorder_bag_file import close_bag
from sim_clock.bag.recorder_bag_file import create_bag
from sim_clock.bag.recorder_bag_file import message_definition
from sim_clock.bag.recorder_bag_file import offered_qos
from sim_clock.bag.recorder_bag_file import qos_key
from sim_clock.bag.recorder_bag_file import typestore_hash
from sim_clock.bag.recorder_frame_order import FrameOrder
from sim_clock.bag.recorder_options import is_recorded_by_all
from sim_clock.bag.recorder_options import parse_arguments
from sim_clock.bag.recorder_round_tally import RoundTally
from sim_clock.bag.recorder_summary import RecordingSummary
from sim_clock.compat import take_ready
from sim_clock.compat import TakenByOwner
from sim_clock.core.units import join_ns
from sim_clock.msg import Round
from sim_clock.node.runtime import loopback_udp_only
from sim_clock.node.runtime import spin_until_stopped
from sim_clock.process.arguments import check_ros_args
from sim_clock.process.arguments import InvalidRosArguments
from sim_clock.process.arguments import split_command_line
from sim_clock.wire.message_types import get_message
from sim_clock.wire.names import CLOCK_QOS
from sim_clock.wire.names import CLOCK_TOPIC
from sim_clock.wire.names import DEFAULT_SERVER
from sim_clock.wire.names import DONE_QOS
from sim_clock.wire.names import RECORDER_NODE_NAME as NODE_NAME
from sim_clock.wire.participant_link import Joining
from sim_clock.wire.participant_link import ParticipantLink
from sim_clock.wire.ready import ReadyReports
#: How often the graph is looked at for the publishers of topics not yet recorded, in s.
DISCOVERY_PERIOD = 0.2
#: At --until, how long the recording waits at most for the messages the server's Rounds
#: announced and that have not come (:mod:`.recorder_round_tally`), in steady ns.
END_WAIT_NS = 10_000_000_000
#: Subscriber history: a lockstep step may deliver a burst on one topic.
RECORD_DEPTH = 1000
#: The recorder takes what its topics received at each /clock, and at least this often (ns
#: of the steady clock) while time stands: RECORD_DEPTH messages a topic in this time are
#: held by DDS until then.
TAKE_PERIOD_NS = 50_000_000
#: A topic subscribed before its publishers are known: reliable and volatile, what rclpy's
#: default publisher offers; adapted once they appear, while nothing has arrived.
EARLY_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=RECORD_DEPTH,
                       reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.VOLATILE)


def subscription_qos(profiles: List[QoSProfile]) -> QoSProfile:
    """Return a QoS that matches every one of the publishers' ``profiles``."""
    reliable = all(p.reliability == ReliabilityPolicy.RELIABLE for p in profiles)
    transient = all(p.durability == DurabilityPolicy.TRANSIENT_LOCAL for p in profiles)
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST, depth=RECORD_DEPTH,
        reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if transient else DurabilityPolicy.VOLATILE)


@dataclass
class RecordedTopic:
    """A topic subscribed to: its type, what its publishers offer, its bag connection."""

    type_name: str
    message_class: object
    qos: QoSProfile
    #: The type hash the publishers announce, else the typestore's.
    rihs01: str = ''
    #: The publishers' profiles as the bag stores them, sorted (empty: none seen yet).
    offered: Tuple = ()
    #: Subscribed before a publisher was seen: its QoS is adapted to the first ones.
    early: bool = False
    received: int = 0
    #: A take found its queue full (messages may have been dropped before it): said once.
    full_said: bool = False
    subscription: object = None
    #: Added to the bag with its first message written, so that ids follow the write order.
    connection: object = None


class Recorder(Node):
    """
    Record topics raw into an open rosbags writer, stamped with simulated time.

    A message gets the /clock that was published last before it: the one with the latest
    source timestamp (the publisher's wall clock, carried by DDS) at or before the message's.
    Order of arrival would not do: a recorder that falls behind takes the messages of each
    subscription in turn, and would give data a /clock older than the one it came after.
    Frames are written once the frame after them has ended and the queues were emptied, each
    sorted by topic (:mod:`.recorder_frame_order`). Source timestamps of publishers on other
    hosts are only as close as the hosts' clocks.
    """

    def __init__(self, writer, topics: List[str], until_ns: Optional[int] = None,
                 *, types: Optional[Dict[str, str]] = None, all_topics: bool = False,
                 server: str = DEFAULT_SERVER, hold_frames: bool = False, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        self._writer = writer
        self._waiting = list(dict.fromkeys(topics))
        self._types = dict(types or {})
        #: --all: every topic that appears is recorded but these (None: only those asked for).
        self._all_server = server if all_topics else None
        self._seen = set()
        self._until_ns = until_ns
        self._typestore = get_typestore(Stores.ROS2_JAZZY)
        self._skipped_types = set()
        self._topics: Dict[str, RecordedTopic] = {}
        self._order = FrameOrder()
        self.summary = RecordingSummary()
        self.clock_ns: Optional[int] = None
        #: The source timestamp of the /clock that reached --until (None: not reached).
        self._end_source: Optional[int] = None
        #: The /clock time that reached --until, and until when (steady ns) the recording
        #: waits for the messages announced before it.
        self._end_ns = self._end_deadline = None
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._tally = RoundTally()
        #: The recorded topics' subscriptions: taken by the recorder itself, never waited on
        #: by the executor, which would look at each of them at each message (TakenByOwner).
        self._taken_here = TakenByOwner()
        #: A /clock came since the topics were last taken; when they are taken next at the
        #: latest (steady ns).
        self._clock_came = False
        self._take_by_ns = 0
        for topic in list(self._waiting):
            if topic in self._types:
                self._subscribe(topic, self._types[topic], [])
                if topic in self._waiting:
                    self.get_logger().info(
                        f'{topic}: the hash of {self._types[topic]} is unknown here: '
                        'subscribing once a publisher announces it')
        # /clock after the topics given with their types: their readers are announced to DDS
        # first, so the log line of the first /clock, which callers wait for, comes after.
        self._clock_sub = self.create_subscription(
            ClockMsg, CLOCK_TOPIC, self._on_clock, CLOCK_QOS)
        # What a deterministic stack published in each round: at --until, waited for.
        self._rounds_sub = self.create_subscription(
            Round, f'{server.rstrip("/")}/rounds', self._on_round, DONE_QOS)
        self._timer = self.create_timer(
            DISCOVERY_PERIOD, self._discover, clock=Clock(clock_type=ClockType.STEADY_TIME))
        # Named in the server's expected_participants, the recorder holds the first frame
        # until its readers have matched the stack's writers: it says so on ~/ready.
        # Topics still waiting for a type count as readers that matched nothing.
        self._ready = ReadyReports(self, server, pending=lambda: self._waiting)
        self._ready.look()
        #: --hold-frames: the participant endpoints, the join being asked (None once
        #: answered), whether the server took it, and the last /clock time, until answered.
        self._link = self._join = None
        self.joined = False
        self._unanswered, self._answer_ns = False, 0
        if hold_frames:
            self._link = ParticipantLink(self, server)
            self._join = Joining(
                self._link, self.get_fully_qualified_name(),
                node=self.get_fully_qualified_name(), period_ns=0,
                also_ready=lambda: self._clock_sub.get_publisher_count() > 0)
        if all_topics:
            self.get_logger().info(
                f'recording every topic but {CLOCK_TOPIC}, clock views and those of {server} '
                f'(stamped with {CLOCK_TOPIC})')
        elif self._waiting:
            self.get_logger().info(
                f'waiting for publishers of {", ".join(self._waiting)} '
                f'(stamped with {CLOCK_TOPIC})')

    @property
    def done(self) -> bool:
        """
        Whether the recording ends: /clock reached --until, and what was announced came.

        What the server's Rounds announced for the frames before the end is waited for,
        END_WAIT_NS at most; the messages that did not come are said.
        """
        if self._end_source is None:
            return False
        if self._end_deadline is None:
            return True
        # What waits in the queues counts now: a Round taken by the executor after the /clock
        # of the end would come too late, and data one message per turn would be slow.
        self._take_waiting(self._rounds_sub)
        for entry in self._topics.values():
            self._take_topic(entry)
        missing = self._tally.missing(self._end_ns, self._order.held(self._end_source))
        now = self._steady.now().nanoseconds
        if missing and now < self._end_deadline:
            return False
        waited = (now - self._end_deadline + END_WAIT_NS) / 1e9
        if missing:
            self.get_logger().warning(
                f'ending without messages the stack announced on ~/rounds, after waiting '
                f'{waited:.3f} s: ' + ', '.join(
                    f'{count} on {topic}' if topic else 'the Round of the last frame'
                    for topic, count in sorted(missing.items())))
        elif waited >= 0.001:
            self.get_logger().info(
                f'waited {waited:.3f} s for the last messages announced on ~/rounds')
        self._end_deadline = None
        return True

    @property
    def waiting(self) -> List[str]:
        """Return the topics asked for that were never subscribed (no type known)."""
        return list(self._waiting)

    def _on_clock(self, msg, info) -> None:
        # --hold-frames: each /clock is answered once the queues were emptied after it, also
        # past --until (the stack goes on while the recording ends).
        self._unanswered, self._answer_ns = True, join_ns(msg.clock)
        if self._end_source is not None:
            return  # ended at --until: what comes after is not recorded
        if self.clock_ns is None:
            # Messages published before this /clock are not recorded: a caller that starts
            # the recorder and then drives time waits for this line first.
            self.get_logger().info(
                f'first {CLOCK_TOPIC} received ({join_ns(msg.clock)} ns): stamping from here on')
        self.clock_ns = join_ns(msg.clock)
        self._clock_came = True
        self.summary.clock(self.clock_ns)
        self._tally.clock(self.clock_ns)
        self._order.clock(info['source_timestamp'], self.clock_ns)
        if self._until_ns is not None and self.clock_ns >= self._until_ns:
            # The end: what was published before this /clock is recorded (stamped before
            # --until), what comes after it is not, however soon it arrives. So a lockstep
            # stack records the same messages run after run, whatever it publishes at the end.
            self._end_source = info['source_timestamp']
            self._end_ns = self.clock_ns
            self._end_deadline = self._steady.now().nanoseconds + END_WAIT_NS
            # Said, so that a recording that ended early tells a /clock from a signal.
            self.get_logger().info(
                f'{CLOCK_TOPIC} reached --until at {self.clock_ns} ns: ending the recording')

    def _on_round(self, msg: Round) -> None:
        self._tally.announced(join_ns(msg.time), msg.round, msg.topics, msg.counts, msg.next_frame)

    def spin_once(self, executor) -> None:
        """One round of the spin loop (see ``sim_clock.node.runtime.spin_until_stopped``)."""
        executor.spin_once(timeout_sec=TAKE_PERIOD_NS / 1e9)
        self._ready.look()
        now_ns = time.monotonic_ns()
        if self._clock_came or now_ns >= self._take_by_ns or self._order.ready():
            # Every queue is emptied before frames are written: /clock first, then the data
            # published before it (stamped by source timestamp, whatever the take order).
            self._clock_came, self._take_by_ns = False, now_ns + TAKE_PERIOD_NS
            self._take_waiting(self._clock_sub)
            for entry in self._topics.values():
                self._take_topic(entry)
        if self._order.ready():
            self._write(self._order.take())
        if self._join is not None:
            self._joining(now_ns)
        elif self.joined and self._unanswered:
            # Every queue was emptied after the last /clock came: the frame may go on.
            self._unanswered = False
            self._link.say_done(self.get_fully_qualified_name(), self._answer_ns)

    def _joining(self, now_ns: int) -> None:
        """--hold-frames: ask ``~/join`` once it is served; say whether the server took it."""
        response = self._join.poll(now_ns)
        if response is None:
            return
        self._join = None
        if not response.success:
            self.get_logger().warning(
                f'{self._link.server} refused the recorder as a participant '
                f'({response.message}): recording without holding its frames')
            return
        self.joined = True
        self.get_logger().info(
            f'joined {self._link.server} as participant {self.get_fully_qualified_name()!r}: '
            'each frame waits until the recorder has taken what came before it')

    def _take_waiting(self, subscription) -> int:
        """Run the callback of each message waiting for ``subscription``; return how many."""
        items = take_ready(subscription)
        for item in items:
            subscription.callback(*item)
        return len(items)

    def _take_topic(self, entry: RecordedTopic) -> None:
        """
        Take what waits for a recorded topic; say once when its queue was full.

        A full queue (RECORD_DEPTH) means DDS may have dropped older messages to keep the
        newest: the stack published faster than the recorder takes. --hold-frames makes it
        wait instead.
        """
        if self._take_waiting(entry.subscription) >= entry.qos.depth and not entry.full_said:
            entry.full_said = True
            self.get_logger().warning(
                f'{entry.subscription.topic_name}: {entry.qos.depth} messages waited at once, '
                'as many as its queue holds: older ones may have been dropped unrecorded; '
                + ('a frame published more on it than that' if self.joined else
                   'with --hold-frames the frames wait for the recorder instead'))

    def finish(self, executor) -> None:
        """
        End the recording: take what is queued still, write what is held, close the topics.

        The queues are emptied while the context is up (it is after Ctrl-C or SIGTERM too: the
        runtime shuts it down after this). At --until, only what was published before the
        /clock that reached it is written. Topics without a message are added to the bag last,
        by name.
        """
        if self.context.ok():
            if self.joined:
                self._link.leave(self.get_fully_qualified_name(), executor.spin_once)
            # Named in expected_participants, it ends: frames wait for a recorder again.
            self._ready.gone()
            for entry in self._topics.values():
                self._take_topic(entry)
        self._write(self._order.take(final=True, before=self._end_source))
        self.summary.after_end += self._order.discard()
        self.summary.before_clock = self._order.before_clock
        self.summary.late = self._order.late
        self.summary.early = self._order.early
        for topic in sorted(self._topics):
            self._connection(topic)

    @property
    def time_step_ns(self) -> Optional[int]:
        """Return the step between successive /clock times, if it never changed."""
        return self._order.time_step_ns

    def _write(self, messages) -> None:
        for message in messages:
            self._writer.write(self._connection(message.topic), message.stamp_ns, message.data)
            self.summary.message(message.topic, message.stamp_ns)
            self._tally.written(message.topic, message.stamp_ns)

    def _connection(self, topic: str):
        """Return the bag connection of a subscribed topic, added to the bag on first use."""
        entry = self._topics[topic]
        if entry.connection is None:
            if self.context.ok():
                self._note_publishers(entry, self.get_publishers_info_by_topic(topic))
            msgdef = message_definition(self._typestore, entry.type_name)
            entry.connection = self._writer.add_connection(
                topic, entry.type_name, msgdef=msgdef, rihs01=entry.rihs01,
                offered_qos_profiles=list(entry.offered))
        return entry.connection

    def _discover(self) -> None:
        if self._all_server is not None:
            for topic, type_names in self.get_topic_names_and_types():
                if topic in self._seen or not self.count_publishers(topic):
                    continue
                self._seen.add(topic)
                if all(is_recorded_by_all(topic, name, self._all_server) for name in type_names):
                    self._waiting.append(topic)
        graph = None
        for topic in list(self._waiting):
            infos = self.get_publishers_info_by_topic(topic)
            if infos:
                type_names = sorted({info.topic_type for info in infos})
                if len(type_names) != 1:
                    self._skip(topic, ' and '.join(type_names), 'several types on one topic')
                else:
                    self._subscribe(topic, type_names[0], infos)
                continue
            if graph is None:
                graph = dict(self.get_topic_names_and_types())
            if len(graph.get(topic, ())) == 1:  # a subscriber says its type
                self._subscribe(topic, graph[topic][0], [])
        for topic, entry in self._topics.items():
            if entry.early:
                self._adapt(topic, entry)

    def _subscribe(self, topic: str, type_name: str, infos) -> None:
        """Subscribe to ``topic``; without ``infos`` (publishers), before any is seen."""
        try:
            message_class = get_message(type_name)
        except LookupError as error:
            self._skip(topic, type_name, str(error))
            return
        msgdef = message_definition(self._typestore, type_name)
        entry = RecordedTopic(type_name, message_class, EARLY_QOS, early=not infos)
        self._note_publishers(entry, infos)
        if not entry.rihs01:
            if infos:
                self._skip(topic, type_name, 'its type hash is unknown')
            return  # no publisher yet: wait for one to announce the hash
        if not msgdef:
            self.get_logger().warning(
                f'no message definition found for {type_name}: {topic} is recorded, '
                'but tools that decode it need the type installed')
        if infos:
            entry.qos = subscription_qos([info.qos_profile for info in infos])
        self._topics[topic] = entry
        self.summary.add_topic(topic, type_name)
        self._waiting.remove(topic)  # first: a stop may end create_subscription
        entry.subscription = self.create_subscription(
            message_class, topic, self._writer_callback(topic, entry), entry.qos, raw=True,
            callback_group=self._taken_here)
        self.get_logger().info(f'recording {topic} ({type_name})' + (
            '' if infos else ', subscribed before any publisher'))

    def _note_publishers(self, entry: RecordedTopic, infos) -> None:
        """Take the type hash and offered profiles from the publishers seen, if any."""
        hashes = {bytes(info.topic_type_hash.value) for info in infos
                  if info.topic_type_hash.version == 1}
        if len(hashes) == 1:
            entry.rihs01 = f'RIHS01_{hashes.pop().hex()}'
        elif not entry.rihs01:
            entry.rihs01 = typestore_hash(self._typestore, entry.type_name)
        if infos:
            entry.offered = tuple(sorted((offered_qos(info.qos_profile) for info in infos),
                                         key=qos_key))

    def _adapt(self, topic: str, entry: RecordedTopic) -> None:
        """
        Match the first publishers of a topic subscribed before them.

        While nothing has arrived, the subscription is made again with their QoS (best
        effort, transient local); after, a best-effort publisher cannot reach it: said once.
        """
        infos = self.get_publishers_info_by_topic(topic)
        if not infos:
            return
        entry.early = False
        others = sorted({info.topic_type for info in infos} - {entry.type_name})
        if others:
            self.get_logger().warning(
                f'{topic}: recorded as {entry.type_name}, but a publisher offers '
                f'{" and ".join(others)}, which DDS does not deliver to it: give the type it '
                'publishes, or the topic without a type')
        infos = [info for info in infos if info.topic_type == entry.type_name]
        if not infos:
            return
        self._note_publishers(entry, infos)
        wanted = subscription_qos([info.qos_profile for info in infos])
        if (wanted.reliability, wanted.durability) == (
                entry.qos.reliability, entry.qos.durability):
            return
        self._take_topic(entry)  # what came counts as received
        if entry.received == 0:
            self.destroy_subscription(entry.subscription)
            entry.qos = wanted
            entry.subscription = self.create_subscription(
                entry.message_class, topic, self._writer_callback(topic, entry), wanted,
                raw=True, callback_group=self._taken_here)
            offer = ', '.join(policy.name.lower().replace('_', ' ')
                              for policy in (wanted.reliability, wanted.durability))
            self.get_logger().info(f'{topic}: subscribed again as its publishers offer ({offer})')
        elif wanted.reliability != entry.qos.reliability:
            self.get_logger().warning(
                f'{topic}: a best-effort publisher appeared after messages came on the reliable '
                'subscription made before it; its messages are not recorded')

    def _skip(self, topic: str, type_name: str, reason: str) -> None:
        self._waiting.remove(topic)
        if type_name not in self._skipped_types:
            self._skipped_types.add(type_name)
            self.get_logger().warning(f'not recording {topic}: type {type_name}: {reason}')

    def _writer_callback(self, topic: str, entry: RecordedTopic):
        order = self._order

        def callback(data: bytes, info) -> None:
            entry.received += 1
            order.message(info['source_timestamp'], topic, data)
        return callback


def main(args=None) -> int:
    """Record until Ctrl-C, SIGTERM or --until; print the summary; return the exit code."""
    own_arguments, argv = split_command_line(sys.argv if args is None else args)
    options = parse_arguments(own_arguments[1:])
    try:
        check_ros_args(argv)
    except InvalidRosArguments as error:
        rclpy.logging.get_logger(NODE_NAME).fatal(str(error))
        return 2
    if os.path.exists(options.output):
        rclpy.logging.get_logger(NODE_NAME).fatal(
            f'{options.output!r} exists already; give a new directory')
        return 1
    try:
        writer = create_bag(options.output, options.storage)
    except (WriterError, OSError) as error:
        rclpy.logging.get_logger(NODE_NAME).fatal(
            f'cannot create {options.output!r}: {error}')
        return 1
    recorders = []

    def make_node() -> Recorder:
        recorders.append(Recorder(writer, options.topics, options.until_ns, types=options.types,
                                  all_topics=options.all, server=options.server,
                                  hold_frames=options.hold_frames))
        return recorders[0]
    try:
        return spin_until_stopped(make_node, argv, logger_name=NODE_NAME,
                                  transports=loopback_udp_only,
                                  executor_factory=SingleThreadedExecutor)
    finally:
        close_bag(writer, options.output,
                  recorders[0].time_step_ns if recorders else None)
        for recorder in recorders:
            for line in recorder.summary.lines(options.output):
                print(line, flush=True)
            if recorder.waiting:
                print(f'not recorded (no publisher seen): {", ".join(recorder.waiting)}',
                      flush=True)
