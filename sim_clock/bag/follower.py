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
``bag_player --follow-clock``: a bag's data played along the /clock of another node.

:class:`BagFollower` publishes no /clock. It subscribes to the /clock another node publishes
(a simulator, a clock server) and publishes each bag message once that /clock has reached the
message's stamp (:class:`~sim_clock.bag.follow_schedule.Following`). Where that node is a sim_clock
server (it serves ``~/join``), the follower joins it as a participant, so that each of its
frames waits until the data due up to it is published and acknowledged by every reliable
reader; elsewhere it plays best effort, and says so (doc/bags.md, "Following another clock").
"""

import itertools
import time
from typing import List
from typing import Optional

from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.node import NodeNameNonExistentError
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rosgraph_msgs.msg import Clock as ClockMsg
from sim_clock.bag.cursor import Cursor
from sim_clock.bag.follow_schedule import Following
from sim_clock.bag.follow_schedule import Moved
from sim_clock.bag.frame_sink import DATA_ACK_TIMEOUT_NS
from sim_clock.bag.frame_sink import qos_for
from sim_clock.bag.reader import Bag
from sim_clock.bag.reader import READ_ERRORS
from sim_clock.bag.replay import python_run
from sim_clock.core.axes import Axes
from sim_clock.core.units import join_ns
from sim_clock.core.units import MAX_TIME_NS
from sim_clock.node.acks import Acknowledgements
from sim_clock.node.alarm import full_name
from sim_clock.node.flow_control import STALLED_WARNING_PERIOD_S
from sim_clock.node.flow_control import window
from sim_clock.node.runtime import spin_until_stopped
from sim_clock.wire.names import CLOCK_TOPIC
from sim_clock.wire.participant_link import Joining
from sim_clock.wire.participant_link import LEAVE_TIMEOUT_NS
from sim_clock.wire.participant_link import Left
from sim_clock.wire.participant_link import ParticipantLink
from sim_clock.wire.ready import ReadyReports

#: The follower's node name: not the clock server's, which it may follow.
FOLLOWER_NODE_NAME = 'bag_player'
#: How often the graph is looked at for the /clock source and its ``~/join``, in ns.
LOOK_NS = 100_000_000
#: How long after the source's /clock writer is seen its ``~/join`` may still appear (DDS
#: discovers a node's endpoints one by one), in ns; then it is played best effort.
JOIN_GRACE_NS = 2_000_000_000
#: The subscription to the source's /clock: every time it publishes, when it publishes
#: reliably (a reset is seen even where time goes back and forth within a burst).
FOLLOWED_CLOCK_DEPTH = 1000


def clock_qos(offered: List[QoSProfile]) -> QoSProfile:
    """Return the /clock subscription for publishers offering ``offered``: reliable if all are."""
    reliable = bool(offered) and all(
        q.reliability == ReliabilityPolicy.RELIABLE for q in offered)
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST, depth=FOLLOWED_CLOCK_DEPTH,
        reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.VOLATILE)


class BagFollower(Node):
    """
    Play a bag along another node's /clock; join it as a participant if it is a clock server.

    ``start_at_zero``: the bag's first stamp is /clock 0; else the stamps are /clock times as
    they are. The node's own clock plays no part (``use_sim_time`` may be either): it takes
    /clock itself, and its waits are on the steady clock.
    """

    def __init__(self, bag: Bag, *, start_at_zero: bool = False, **kwargs):
        super().__init__(FOLLOWER_NODE_NAME, **kwargs)
        self._bag = bag
        self.axes = Axes(clock_offset_ns=0 if start_at_zero else bag.start_ns,
                         bag_start_ns=bag.start_ns)
        self._topic_publishers = [
            self.create_publisher(topic.message_class, topic.name, qos_for(topic.offered_qos))
            for topic in bag.topics]
        #: Flow control as a stepped replay's: a writer has at most its window of samples out
        #: before its readers have acknowledged them, so a /clock that jumps over many
        #: messages loses none at a reliable reader (:mod:`sim_clock.node.flow_control`).
        self._windows = [window(publisher.qos_profile) for publisher in self._topic_publishers]
        self._out = [0] * len(self._topic_publishers)
        self.acks = Acknowledgements()
        self.following = Following(Cursor(self._read_from, bag.start_ns), self.axes,
                                   python_run(self._emit, _nothing))
        self._clock_sub = None
        #: The source's node (full name), and since when (steady ns) it is seen without ~/join.
        self._sources: List[str] = []
        self._seen_ns: Optional[int] = None
        self._said_best_effort = False
        #: The clock server joined (or being joined), with its endpoints.
        self.server: Optional[str] = None
        self.joined = self._refused = False
        #: Its participant endpoints (:class:`ParticipantLink`), the join asked, the reports.
        self._link: Optional[ParticipantLink] = None
        self._join: Optional[Joining] = None
        self._ready = None
        self._looked_ns = 0
        self._log_start()

    # -- the source ----------------------------------------------------------------------------

    def spin_once(self, executor) -> None:
        """One round of the spin loop (see ``sim_clock.node.runtime.spin_until_stopped``)."""
        executor.spin_once(timeout_sec=LOOK_NS / 1e9)
        now_ns = time.monotonic_ns()
        if now_ns - self._looked_ns >= LOOK_NS:
            self._looked_ns = now_ns
            self._look(now_ns)
        if self._ready is not None:
            self._ready.look(now_ns)

    def _look(self, now_ns: int) -> None:
        """Find the /clock source in the graph; join it where it is a clock server."""
        infos = self.get_publishers_info_by_topic(CLOCK_TOPIC)
        if not all(info.node_namespace.startswith('/') for info in infos):
            return  # a writer whose node is not known yet (rmw's placeholder names): look again
        sources = sorted({full_name(info.node_namespace, info.node_name) for info in infos})
        if sources != self._sources:
            self._sources = sources
            self._sources_changed(sources, [info.qos_profile for info in infos])
        if not sources:
            return
        if self.server is None:
            for source in sources:
                if _serves(self, source, 'join'):
                    self._begin_join(source)
                    break
            else:
                if self._seen_ns is None:
                    self._seen_ns = now_ns
                elif now_ns - self._seen_ns >= JOIN_GRACE_NS and not self._said_best_effort:
                    self._said_best_effort = True
                    self.get_logger().info(
                        f'following {CLOCK_TOPIC} of {", ".join(sources)} best effort: not a '
                        'sim_clock server (no ~/join), so its time does not wait for this '
                        'player; each message goes out once this player has seen a '
                        f'{CLOCK_TOPIC} at or past its stamp')
        if self.server is not None and not self.joined and not self._refused:
            self._joining(now_ns)

    def _sources_changed(self, sources: List[str], offered: List[QoSProfile]) -> None:
        logger = self.get_logger()
        if self.server is not None and self.server not in sources:
            logger.warning(f'{self.server} publishes {CLOCK_TOPIC} no more: this player is '
                           'no longer its participant')
            self._forget_server()
        if self.server is None:  # the grace before best effort counts from the new sources
            self._seen_ns, self._said_best_effort = None, False
        if not sources:
            logger.info(f'no node publishes {CLOCK_TOPIC} now: nothing plays until one does')
            return
        if len(sources) > 1:
            logger.warning(f'several nodes publish {CLOCK_TOPIC}: {", ".join(sources)}; time '
                           'may jump back and forth, and each jump back replays the bag')
        qos = clock_qos(offered)
        subscription = self._clock_sub
        if subscription is not None and subscription.qos_profile.reliability == qos.reliability:
            return
        if subscription is not None:  # a best-effort source came: a reliable reader misses it
            self.destroy_subscription(subscription)
        self._clock_sub = self.create_subscription(ClockMsg, CLOCK_TOPIC, self._on_clock, qos)
        logger.info(f'following {CLOCK_TOPIC} of {", ".join(sources)} '
                    f'({qos.reliability.name.lower().replace("_", " ")})')

    def _begin_join(self, server: str) -> None:
        """Make the endpoints of ``server``'s participant protocol; join once they matched."""
        self.server = server
        self._link = ParticipantLink(self, server)
        self._join = Joining(
            self._link, self.participant_name, node=self.get_fully_qualified_name(),
            period_ns=0, also_ready=lambda: self._clock_sub.get_publisher_count() > 0)

    def _joining(self, now_ns: int) -> None:
        """Ask ``~/join`` once its service, the done topic and /clock have matched; take it."""
        response = self._join.poll(now_ns)
        if response is None:
            return
        if not response.success:
            self.get_logger().warning(
                f'{self.server} refused this player as a participant ({response.message}): '
                f'following its {CLOCK_TOPIC} best effort')
            self._refused = True
            return
        self.joined = True
        # Named in the server's expected_participants, the player holds the first frame until
        # its writers have matched the stack's readers: it says so on ~/ready.
        self._ready = ReadyReports(self, self.server)
        self.get_logger().info(
            f'following {CLOCK_TOPIC} of {self.server}, a sim_clock server: joined as '
            f'participant {self.participant_name!r}; each of its frames waits until the '
            'messages stamped up to it are published and acknowledged by their reliable '
            'readers')

    def _forget_server(self) -> None:
        """Drop a server that went: its endpoints go, and the next source is looked at anew."""
        self._link.destroy()
        if self._ready is not None:
            self.destroy_publisher(self._ready.publisher)
        self.server, self.joined, self._refused = None, False, False
        self._link = self._join = self._ready = None

    @property
    def participant_name(self) -> str:
        """Return the name this player joins a clock server under: its node's full name."""
        return self.get_fully_qualified_name()

    # -- the frames ----------------------------------------------------------------------------

    def _on_clock(self, msg: ClockMsg) -> None:
        clock_ns = join_ns(msg.clock)
        try:
            moved = self.following.follow(clock_ns)
        except READ_ERRORS as error:
            self._read_failed(error)
            self.following.abandon()
            moved = None
        if self.joined:
            self._wait_for_readers(clock_ns)
        if moved is not None:
            self._log_moved(moved)
        if self.joined:
            self._say_done(clock_ns)

    def _emit(self, batch, start: int, stop: int) -> None:
        """Publish messages ``start`` to ``stop`` of ``batch``, each writer within its window."""
        _, topics, datas = batch
        publishers, windows, out = self._topic_publishers, self._windows, self._out
        for index in range(start, stop):
            which = topics[index]
            if 0 <= windows[which] <= out[which]:
                self._window_acknowledged(which)
            publishers[which].publish(datas[index])
            out[which] += 1

    def _wait_for_readers(self, clock_ns: int) -> None:
        """Wait until the data published for a frame is acknowledged (or its readers stall)."""
        pending = [which for which, out in enumerate(self._out) if out]
        if not pending:
            return
        stalled = self._acknowledged(pending)
        if stalled:
            self.get_logger().warning(
                f'the data up to {clock_ns} ns is said done without the acknowledgements of '
                f'every reliable reader of: {", ".join(stalled)}', throttle_duration_sec=5.0)

    def _window_acknowledged(self, which: int) -> None:
        """
        Wait for the readers of writer ``which``, whose window is spent, stalled ones too.

        As flow control's windows (:mod:`sim_clock.node.flow_control`): a topic whose readers
        stalled is waited for at every window all the same, or its live readers could lose
        messages.
        """
        stalled = self._acknowledged([which], skip_stalled=False)
        if stalled:
            self.get_logger().warning(
                f'stalled reliable readers of: {", ".join(stalled)} (they did not acknowledge '
                f'a window within {DATA_ACK_TIMEOUT_NS / 1e9:g} s): each window of messages on '
                f'those topics waits {DATA_ACK_TIMEOUT_NS / 1e9:g} s for them until they catch '
                f'up or leave', throttle_duration_sec=STALLED_WARNING_PERIOD_S)

    def _acknowledged(self, writers: List[int], skip_stalled: bool = True) -> List[str]:
        """
        Wait for the readers of ``writers`` (indices); return the topics not acknowledged.

        Topics that stalled before are skipped while their readers are the same, unless
        ``skip_stalled`` is False (a window's wait).
        """
        stalled = self.acks.wait_now([self._topic_publishers[which] for which in writers],
                                     DATA_ACK_TIMEOUT_NS, skip_stalled=skip_stalled)
        for which in writers:
            self._out[which] = 0
        return stalled

    def _say_done(self, clock_ns: int) -> None:
        """
        Say ``clock_ns`` done, naming the next time a message is due.

        The server then holds only the frames at or after that time for this player; none
        at the bag's end (a reset of the server makes the next frame due again).
        """
        next_ns = self.following.next_clock_ns
        self._link.say_done(self.participant_name, clock_ns,
                            MAX_TIME_NS if next_ns is None else min(next_ns, MAX_TIME_NS))

    def _log_moved(self, moved: Moved) -> None:
        logger = self.get_logger()
        if moved.previous_ns is None:
            logger.info(f'first {CLOCK_TOPIC}: {moved.clock_ns} ns; the messages stamped up to '
                        f'it go out with the first later {CLOCK_TOPIC}')
        elif moved.went_back:
            logger.info(
                f'{CLOCK_TOPIC} went back from {moved.previous_ns} to {moved.clock_ns} ns (a '
                'reset of the source): the bag plays again from there, its messages from that '
                f'time on going out with the first later {CLOCK_TOPIC}')
        if moved.ended:
            logger.info(
                f'end of the bag at {CLOCK_TOPIC} {moved.clock_ns} ns: every message played; '
                f'nothing more is published until {CLOCK_TOPIC} goes back (a reset of the '
                'source)')

    # -- the bag -------------------------------------------------------------------------------

    def _read_from(self, start_ns: int):
        """Return the bag's batches from ``start_ns`` on; none after a read error."""
        try:
            batches = self._bag.batches(start_ns)
            first = next(batches, None)  # a read error surfaces here, not in a frame
        except READ_ERRORS as error:
            self._read_failed(error)
            return iter(())
        return iter(()) if first is None else itertools.chain([first], batches)

    def _read_failed(self, error: Exception) -> None:
        self.get_logger().error(
            f'reading the bag failed: {error}; no more data plays until {CLOCK_TOPIC} goes '
            'back')

    def _log_start(self) -> None:
        bag, logger, axes = self._bag, self.get_logger(), self.axes
        for path, notes in bag.notes:  # one warning per bag
            logger.warning(f'{path}: read from its data files, which metadata.yaml disagrees '
                           f'with: {"; ".join(notes)}')
        for type_name, (topics, reason) in bag.skipped.unknown_types.items():
            logger.warning(f'skipping {", ".join(topics)}: {reason}')
        if bag.missing_topics:
            logger.warning(f'not in the bag: {", ".join(bag.missing_topics)}')
        for topic in bag.skipped.clock:
            logger.info(f'{topic} in the bag is not republished: this player follows '
                        f'{CLOCK_TOPIC}')
        playing = sum(topic.message_count for topic in bag.topics)
        logger.info(
            f'following {CLOCK_TOPIC} with {bag.path}: {len(bag.topics)} topics, {playing} '
            f'messages, bag time {bag.start_ns} to {bag.end_ns} ns played at {CLOCK_TOPIC} '
            f'{axes.to_clock(0)} to {axes.to_clock(axes.from_bag(bag.end_ns))} ns; waiting '
            f'for a node that publishes {CLOCK_TOPIC}')

    # -- the end -------------------------------------------------------------------------------

    def stop(self) -> None:
        """End every wait for readers at once: the process stops (a signal)."""
        self.acks.stop()

    def finish(self, executor) -> None:
        """
        Leave the clock server, if joined and it answers within LEAVE_TIMEOUT_NS.

        Not asked where its ``~/leave`` is no longer served (it stopped).
        """
        if not (self.joined and self.context.ok()):
            return
        if self._link.leave(self.participant_name, executor.spin_once,
                            LEAVE_TIMEOUT_NS) is Left.UNANSWERED:
            self.get_logger().info(f'left {self.server} without an answer to ~/leave')


def _serves(node: Node, server: str, service: str) -> bool:
    """Whether the graph ``node`` sees has node ``server`` with its ``~/<service>``."""
    namespace, _, name = server.rpartition('/')
    try:
        services = node.get_service_names_and_types_by_node(name, namespace or '/')
    except NodeNameNonExistentError:
        return False
    return any(found == f'{server}/{service}' for found, _ in services)


def _nothing(time_ns: int) -> None:
    """Finish a followed frame: nothing to publish, the source publishes /clock."""


def follow_clock(bag: Bag, argv: List[str], *, start_at_zero: bool = False) -> int:
    """Play ``bag`` along another node's /clock until Ctrl-C or SIGTERM; return the exit code."""
    return spin_until_stopped(
        lambda: BagFollower(bag, start_at_zero=start_at_zero), argv,
        logger_name=FOLLOWER_NODE_NAME, executor_factory=SingleThreadedExecutor)
