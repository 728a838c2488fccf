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
The bag player's frame sink: each frame's bag messages, then its /clock.

:class:`BagFrames` is the sink a :class:`~sim_clock.node.server.ClockServer` makes from its
:class:`~sim_clock.node.publishing.SinkParts` and tells each frame to publish when it plays a
bag: it publishes the frame's messages, raw, before the frame's ``/clock``, and while
participants hold the clock has the data of the frame due for them acknowledged by every
reliable reader first. It is the core's position (``Core.position``): every reset moves the
bag's cursor with the rest of the core. It feeds the replay's
:class:`~sim_clock.bag.progress.Progress`, and says what the end of the bag asks for (a loop,
a pause). Also here: the QoS of the bag's publishers (:func:`qos_for`) and how
long a frame waits for its data's acknowledgements, which the ``--follow-clock`` node shares.
"""

from array import array
import itertools
import sys
import time
from typing import Callable
from typing import Dict
from typing import List
from typing import Optional
from typing import Sequence

from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rosbags.interfaces import QosDurability
from rosbags.interfaces import QosReliability
from sim_clock import _replay
from sim_clock.bag.cursor import Cursor
from sim_clock.bag.flow_controlled_run import paced
from sim_clock.bag.progress import choose_output
from sim_clock.bag.progress import Output
from sim_clock.bag.progress import Playback
from sim_clock.bag.progress import probe_terminal
from sim_clock.bag.progress import Progress
from sim_clock.bag.reach import FirstMatches
from sim_clock.bag.reach import Unheard
from sim_clock.bag.read_ahead import ReadAhead
from sim_clock.bag.reader import Bag
from sim_clock.bag.reader import READ_ERRORS
from sim_clock.bag.replay import DROPPED
from sim_clock.bag.replay import native_run
from sim_clock.bag.replay import python_run
from sim_clock.compat import publisher_address
from sim_clock.node.flow_control import WAIT_TIMEOUT_NS
from sim_clock.node.publishing import clock_in_c
from sim_clock.node.publishing import clock_publisher
from sim_clock.node.publishing import pinned
from sim_clock.node.publishing import publisher_destroyed
from sim_clock.node.publishing import SinkParts

#: History depth of a volatile topic's publisher, at least: a step may release a burst of
#: messages on one topic, and a reliable writer repairs losses only within its history.
MIN_VOLATILE_DEPTH = 100
#: Where a bag has no QoS for a topic: what most publishers offer.
DEFAULT_TOPIC_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=MIN_VOLATILE_DEPTH,
    reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)

#: The longest a frame due for participants waits for its data to be acknowledged, in ns: a
#: reader on a live host answers within milliseconds (heartbeats every 1 ms, see
#: ``node/fastdds2_profile.xml``); one that has not within this is stalled and skipped. The
#: stall wait of flow control: 1 s counted a live reader as stalled on a loaded machine.
DATA_ACK_TIMEOUT_NS = WAIT_TIMEOUT_NS
#: The /clock times of a run that publishes its frames' data only.
NO_CLOCK = array('q')


def qos_for(offered: tuple) -> QoSProfile:
    """
    Return the publisher QoS for a topic recorded with the ``offered`` profiles.

    As rosbag2's player adapts to recorded offers: reliable only if every recorded publisher
    was, transient local only if every one was. A transient-local topic keeps its recorded
    depth (what a late joiner gets); a volatile one at least :data:`MIN_VOLATILE_DEPTH`.
    """
    if not offered:
        return DEFAULT_TOPIC_QOS
    reliable = all(q.reliability is not QosReliability.BEST_EFFORT for q in offered)
    transient = all(q.durability is QosDurability.TRANSIENT_LOCAL for q in offered)
    depth = max(max(q.depth for q in offered), 1)
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=depth if transient else max(depth, MIN_VOLATILE_DEPTH),
        reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if transient else DurabilityPolicy.VOLATILE)


class BagFrames:
    """
    The player's frame sink: each frame's bag messages, then its /clock; loop or pause at the end.

    While participants hold the clock, the last frame of each batch (the one due for them) is
    published in lockstep: its messages, then a wait until every reliable reader has them,
    then its /clock. A participant thus has every message stamped up to a time it must finish
    before that time comes, whichever order DDS delivers two writers' samples in.

    Messages are published by ``sim_clock._replay.play`` in C where rclpy lays a Clock out as
    it does (one thread publishes, and :meth:`close` replaces the run before the node destroys
    the publishers); by the Python model otherwise.
    """

    def __init__(self, parts: SinkParts, bag: Bag, reader: ReadAhead, show_progress: bool,
                 qos_overrides: Optional[Dict[str, QoSProfile]] = None):
        self._core = core = parts.core
        self._timeline = core.timeline
        self._logger = logger = parts.logger
        self._bag = bag
        self._reader = reader
        self._axes = axes = parts.axes
        #: The timeline time of the bag's last stamp.
        self.end_ns = axes.from_bag(bag.end_ns)
        self.loop = False
        #: Free run or real time at the end without loop: pause there and stay (True), or
        #: pause and call :attr:`on_end` (the player then ends).
        self.stay_at_end = False
        self.on_end: Callable[[], None] = _nothing
        #: A loop in free run or real time: hold time at the start (paused) and call
        #: :attr:`on_loop`, which lets it go (the player's --delay, before each loop as
        #: rosbag2's). Applied with the loop's reset, so no frame of the new pass goes first.
        self.hold_at_loop = False
        self.on_loop: Callable[[], None] = _nothing
        #: Its frames may leave a change at their end (a loop, a pause at the bag's end).
        self.ends_frames = True
        self._ended = False
        qos_overrides = qos_overrides or {}
        for name in sorted(set(qos_overrides) & {topic.name for topic in bag.topics}):
            logger.info(f'overriding the QoS profile of {name}')
        #: When each topic's writer first matched a reader: what went out before reached
        #: nobody (:meth:`unheard`).
        self.first_matches = FirstMatches([topic.name for topic in bag.topics],
                                          axes.bag_start_ns)
        #: The furthest timeline time the frames reached (:attr:`_reached_ns` in bag time).
        self._reached_time_ns = 0
        self._at_close = None
        self._publishers = [
            parts.create_publisher(topic.message_class, topic.name,
                                   qos_overrides.get(topic.name) or qos_for(topic.offered_qos))
            for topic in bag.topics]
        #: The topics whose writer has not matched a reader yet, asked before each run.
        self._unmatched = list(range(len(self._publishers)))
        self._clock = parts.clock_publisher
        #: Every writer of its frames, pinned while frames go out through their addresses.
        self._pinned = pinned((*self._publishers, self._clock))
        pointers = array('Q', [publisher_address(publisher) for publisher in self._publishers])
        offset_ns = axes.clock_offset_ns
        self._publish_clock = clock_publisher(self._clock, offset_ns)
        publish = _replay.publish

        def emit(batch, start, stop):
            publish(pointers, batch[1], batch[2], batch[3], start, stop)
        #: The messages handed out when their acknowledgements were last waited for (-1:
        #: never): a lockstep /clock waits only if data went out since.
        self._acknowledged_out = -1
        # The bag's topics, then /clock: the budgets as sim_clock._replay.play spends them.
        # The server's /clock has no other budget: this sink stands in for its ClockSink.
        self._flow = flow = parts.flow.writers([*self._publishers, self._clock])
        self._clock_writer = len(self._publishers)  # /clock's index in the budgets
        # As fast as possible, a reliable reader of a topic would lose what the writer's
        # KEEP_LAST history overwrote before the reader acknowledged it: held to its readers.
        flow.hold_at_full_speed(range(len(self._publishers)))
        budgets = flow.budgets
        if clock_in_c():
            self._run = paced(flow, native_run(
                pointers, publisher_address(self._clock), offset_ns, budgets))
        else:
            self._run = paced(flow, python_run(emit, self._publish_clock, budgets))
        self._acks = parts.acks
        self.cursor = Cursor(self._read_from, axes.bag_start_ns)
        #: Where the replay is: a line on the user's terminal (stderr), else in the log.
        output = choose_output(show_progress, probe_terminal(sys.stderr))
        self.progress = Progress(
            axes.bag_start_ns, bag.end_ns, sum(topic.message_count for topic in bag.topics),
            time.monotonic_ns, stream=sys.stderr if output is Output.LINE else None,
            log=logger.info if output is Output.LOG else None)
        self.progress.bag_counts = (
            bag.message_count, sum(entry.count for entry in bag.left_out),
            '\n'.join(f'{entry.count} {entry.reason}' for entry in bag.left_out))
        # Every reset moves the cursor, with the rest of the core (Core.take_changes).
        core.position = self

    def publish_frames(self, frames: range,
                       clock_times: Optional[Sequence[int]] = None) -> None:
        """
        Publish each frame's messages, then its /clock (the publishers pinned meanwhile).

        ``clock_times`` (free run under the /clock rate cap): only those frames publish their
        /clock; every frame publishes its messages at their stamps all the same.
        """
        cursor, flow, played = self.cursor, self._flow, 0
        # The topics whose writer matched its first reader since the last run (a plain loop:
        # this is every run's path).
        for index in tuple(self._unmatched):
            if self._publishers[index].get_subscription_count() > 0:
                self.first_matches.matched(index, self._reached_ns)
                self._unmatched.remove(index)
        if DROPPED in flow.budgets:  # a writer left out of the last run publishes again
            flow.start()
        clock_out = None if clock_times is None else array('q', clock_times)
        # The last frame due for participants goes in lockstep, whatever the cap: its data,
        # then the wait for its acknowledgements, then its /clock.
        lockstep = frames and self._core.holds_frames()
        parts = ([(frames[:-1], clock_out), (frames[-1:], NO_CLOCK)] if lockstep
                 else [(frames, clock_out)])
        with self._pinned:
            try:
                for part, clock in parts:
                    cursor.play(part, self._axes.bag_start_ns, self._run, clock)
                    played += len(part)
            except READ_ERRORS as error:
                self._read_failed(error)
                played += cursor.frames_played
                cursor.seek(self._bag.end_ns + 1)
                # The frames not published yet, without data: time goes on.
                for time_ns in frames[played:]:
                    if clock_times is None or time_ns in clock_times:
                        self._publish_clock(time_ns)
            else:
                # Unless /clock was left out of these frames (a refused sample: bag.flow.paced).
                if lockstep and flow.budgets[self._clock_writer] != DROPPED:
                    flow.publish(self._clock_writer, self._publish_acknowledged, frames[-1:])
        self._progressed()

    def _publish_acknowledged(self, time_ns: int) -> None:
        """Publish a frame's /clock once its messages are acknowledged (or their readers stall)."""
        stalled, handed_out = [], self.cursor.handed_out
        if handed_out != self._acknowledged_out:  # else no data since the last wait: no look
            self._acknowledged_out = handed_out
            stalled = self._acks.wait_now(self._publishers, DATA_ACK_TIMEOUT_NS)
        if stalled:
            self._logger.warning(
                f'frame at {self._axes.to_clock(time_ns)} ns goes out with its data not '
                f'acknowledged by every reliable reader of: {", ".join(stalled)}',
                throttle_duration_sec=5.0)
        self._publish_clock(time_ns)

    def publish_time(self, time_ns: int) -> None:
        """Publish /clock at ``time_ns`` (timeline time)."""
        with self._pinned:
            self._publish_clock(time_ns)
        self._progressed()

    def publishers(self) -> list:
        """Return the publishers of /clock and of the bag's topics."""
        return [self._clock, *self._publishers]

    @property
    def _reached_ns(self) -> int:
        """Return the furthest bag time the frames reached, within the bag."""
        return min(self._axes.to_bag(self._reached_time_ns), self._bag.end_ns)

    def unheard(self) -> List[Unheard]:
        """
        Return the messages of each topic that went out before its writer matched any reader.

        Counted from the bag (the first pass, up to the furthest bag time reached); after
        :meth:`close`, as things stood then. A read error: none counted.
        """
        reached, subscribed = self._at_close or (
            self._reached_ns, [p.get_subscription_count() > 0 for p in self._publishers])
        try:
            return self.first_matches.unheard(reached, subscribed, self._bag.count_until)
        except READ_ERRORS as error:
            self._logger.warning(f'messages that went out before their readers matched are '
                                 f'not counted: reading the bag failed: {error}')
            return []

    def close(self) -> None:
        """End the read-ahead process; from now on a publish raises."""
        self._at_close = (self._reached_ns,
                          [p.get_subscription_count() > 0 for p in self._publishers])
        self._reader.close()
        self._run = self._publish_clock = publisher_destroyed
        self.progress.close()

    def move_to(self, time_ns: int, epoch: int) -> None:
        """Play the bag from timeline time ``time_ns`` on, after a reset (0: the bag's start)."""
        self.cursor.seek(self._axes.to_bag(time_ns))
        self.progress.restart(time_ns, self.cursor.handed_out, epoch)
        self._ended = False

    def _progressed(self) -> None:
        timeline = self._timeline
        if timeline.free_running:
            playback = Playback.PLAYING
        else:
            playback = Playback.STEPPED if timeline.sync else Playback.PAUSED
        self.progress.update(timeline.time_ns, self.cursor.handed_out, playback)
        self._reached_time_ns = max(self._reached_time_ns, timeline.time_ns)

    def _read_from(self, start_ns: int):
        """Return the read-ahead's batches from ``start_ns`` on; none after a read error."""
        try:
            batches = self._reader.batches(start_ns)
            # The first batch now: a read error surfaces here, not in the next frame.
            first = next(batches, None)
        except READ_ERRORS as error:
            self._read_failed(error)
            return iter(())
        return batches if first is None else itertools.chain([first], batches)

    def _read_failed(self, error: Exception) -> None:
        self._logger.error(
            f'reading the bag failed: {error}; no more data plays until a seek or reset')

    def limit(self, limit: int) -> int:
        """
        Return how many of the next ``limit`` frames go out in one run: up to the bag's end.

        The frame at or after the last stamp ends a run, so that a loop or the pause at the
        end is applied before a frame past the bag goes out (free run, as fast as possible
        too).
        """
        timeline = self._timeline
        left_ns = self.end_ns - timeline.time_ns
        if left_ns <= 0:  # at or past the end: one frame, then what the end asks for
            return 1
        # frames_until's ceiling, in place: this is on every free-run frame's walk.
        return max(1, min(limit, -(-left_ns // timeline.time_step_ns)))

    def empty_frames(self) -> int:
        """
        Return how many of the next frames carry no message: those before the next message's.

        The frame at or after the next message's stamp (or the bag's end) plays it; the frames
        before it hand out nothing. 0 where the next message is not known without reading.
        """
        timeline, cursor = self._timeline, self.cursor
        if cursor.exhausted:
            target = self.end_ns
        elif cursor.next_known:
            target = min(self._axes.from_bag(cursor.next_time_ns), self.end_ns)
        else:
            return 0
        left_ns = target - timeline.time_ns
        if left_ns <= 0:
            return 0
        return -(-left_ns // timeline.time_step_ns) - 1

    def end_of_frames(self) -> Optional[Callable[[], object]]:
        """
        Return what the end of the bag asks for once the frames out are finished, or None.

        Loop: back to the bag's start (a reset), held there first if asked. Else free run and
        real time pause there (and the player ends unless it stays), and sync mode steps on
        without data. The frame engine applies it at the frame boundary.
        """
        timeline = self._timeline
        # Time at or past the bag's last stamp: every message has been handed out (a frame
        # plays all up to its time). The cursor may not know yet, when its batch was used up
        # exactly by that frame: asked, a frame past the end would go out before a loop.
        if timeline.time_ns < self.end_ns:
            self._ended = False
            return None
        ended, self._ended = self._ended, True
        if self.loop:
            return self._loop
        if timeline.free_running:
            return self._pause_at_end
        if not ended:
            self._logger.info('end of the bag: time steps on without data')
        return None

    def _loop(self) -> None:
        timeline = self._timeline
        playing = timeline.free_running
        timeline.seek(0, 'loop: end of the bag reached')
        if playing and self.hold_at_loop:
            timeline.set_paused(True)
            self.on_loop()

    def _pause_at_end(self) -> None:
        timeline = self._timeline
        if not timeline.free_running:
            return  # paused or stepped meanwhile
        self.progress.end_line()  # the last line stays above the log's
        timeline.set_paused(True)
        clock_ns = self._axes.to_clock(timeline.time_ns)
        if self.stay_at_end:
            self._logger.info(
                f'end of the bag: paused at {clock_ns} ns (~/seek or ~/reset and ~/resume to '
                'play again, or set loop)')
            return
        self._logger.info(f'end of the bag at {clock_ns} ns: the player ends (stay_at_end '
                          'keeps it there, paused)')
        self.on_end()


def _nothing() -> None:
    """Do nothing at the end of the bag: no one asked to hear of it."""
