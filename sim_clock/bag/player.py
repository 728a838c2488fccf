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
The bag player: a clock server whose timeline is a bag's, by composition.

:class:`BagPlayer` makes a :class:`~sim_clock.node.server.ClockServer` (same node name,
parameters, services and clock modes) with a clock offset (the bag's first stamp) and a frame
sink, :class:`BagFrames`, that publishes each frame's messages, raw, before its ``/clock``. A
step therefore answers once all data up to the new time is out. Every reset rewinds the bag
to the timeline's new time (``~/seek`` is a reset to a given time, ``loop`` a reset at the end).
The sink feeds a :class:`~sim_clock.bag.progress.Progress` (``~/get_progress``, and a line on
the user's terminal or in the log).
"""

from array import array
from dataclasses import dataclass
import itertools
import sys
import time
from typing import Callable
from typing import Dict
from typing import List
from typing import Optional

from rcl_interfaces.msg import ParameterDescriptor
from rcl_interfaces.msg import SetParametersResult
import rclpy
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rosbags.interfaces import QosDurability
from rosbags.interfaces import QosReliability
from sim_clock import _replay
from sim_clock.arguments import check_ros_args
from sim_clock.arguments import InvalidRosArguments
from sim_clock.arguments import split_command_line
from sim_clock.bag.cursor import Cursor
from sim_clock.bag.flow import paced
from sim_clock.bag.play_options import parse_arguments
from sim_clock.bag.play_options import PlayOptions
from sim_clock.bag.progress import choose_output
from sim_clock.bag.progress import Output
from sim_clock.bag.progress import Playback
from sim_clock.bag.progress import probe_terminal
from sim_clock.bag.progress import Progress
from sim_clock.bag.read_ahead import ReadAhead
from sim_clock.bag.reader import Bag
from sim_clock.bag.reader import BagError
from sim_clock.bag.reader import READ_ERRORS
from sim_clock.bag.replay import native_run
from sim_clock.bag.replay import python_run
from sim_clock.compat import publisher_address
from sim_clock.core.axes import Axes
from sim_clock.core.rules import max_clock_rate_from_float
from sim_clock.core.rules import Refused
from sim_clock.core.rules import start_time_from_value
from sim_clock.core.timeline import Change
from sim_clock.core.units import format_seconds
from sim_clock.core.units import join_ns
from sim_clock.core.units import NS_PER_SEC
from sim_clock.names import NODE_NAME
from sim_clock.names import SERVICE_QOS
from sim_clock.node.flow import FlowControl
from sim_clock.node.flow import WAIT_TIMEOUT_NS
from sim_clock.node.outcomes import Answer
from sim_clock.node.publishing import clock_in_c
from sim_clock.node.publishing import clock_publisher
from sim_clock.node.publishing import held
from sim_clock.node.publishing import publisher_destroyed
from sim_clock.node.runtime import spin_until_stopped
from sim_clock.node.server import ClockServer
from sim_clock.node.services import fill
from sim_clock.srv import GetProgress
from sim_clock.srv import Seek

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

LOOP_DESCRIPTOR = ParameterDescriptor(
    description='At the end of the bag, start again from its beginning (a reset: epoch + 1). '
                'Off: free run and real-time mode pause at the end; sync mode steps on, '
                'without data.')


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


@dataclass
class SeekOutcome(Answer):
    """The outcome of ``~/seek``: where time is after the call."""

    clock_ns: int
    epoch: int


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

    def __init__(self, server: ClockServer, bag: Bag, reader: ReadAhead, show_progress: bool,
                 qos_overrides: Optional[Dict[str, QoSProfile]] = None):
        self._server = server
        self._bag = bag
        self._reader = reader
        self._axes = axes = server.axes
        #: The timeline time of the bag's last stamp.
        self.end_ns = axes.from_bag(bag.end_ns)
        self.loop = False
        self._ended = False
        qos_overrides = qos_overrides or {}
        for name in sorted(set(qos_overrides) & {topic.name for topic in bag.topics}):
            server.get_logger().info(f'overriding the QoS profile of {name}')
        self._publishers = [
            server.create_publisher(topic.message_class, topic.name,
                                    qos_overrides.get(topic.name) or qos_for(topic.offered_qos))
            for topic in bag.topics]
        self._held = (*self._publishers, server.clock_publisher)
        pointers = array('Q', [publisher_address(publisher) for publisher in self._publishers])
        offset_ns = axes.clock_offset_ns
        self._publish_clock = clock_publisher(server.clock_publisher, offset_ns)
        publish = _replay.publish

        def emit(batch, start, stop):
            publish(pointers, batch[1], batch[2], batch[3], start, stop)

        def emit_unacknowledged(batch, start, stop):
            self._unacknowledged = True
            emit(batch, start, stop)
        #: Whether data went out since the last wait for its acknowledgements.
        self._unacknowledged = True
        self._flow = flow = FlowControl(server, [*self._publishers, server.clock_publisher])
        budgets = flow.budgets
        if clock_in_c():
            self._run = paced(flow, native_run(
                pointers, publisher_address(server.clock_publisher), offset_ns, budgets))
        else:
            self._run = paced(flow, python_run(emit, self._publish_clock, budgets))
        self._acks = server.acks
        self._lockstep_run = paced(flow, python_run(
            emit_unacknowledged, self._publish_acknowledged, budgets))
        self.cursor = Cursor(self._read_from, axes.bag_start_ns)
        #: Where the replay is: a line on the user's terminal (stderr), else in the log.
        output = choose_output(show_progress, probe_terminal(sys.stderr))
        self.progress = Progress(
            axes.bag_start_ns, bag.end_ns, sum(topic.message_count for topic in bag.topics),
            time.monotonic_ns, stream=sys.stderr if output is Output.LINE else None,
            log=server.get_logger().info if output is Output.LOG else None)
        server.add_change_listener(self._on_change)

    def publish_frames(self, frames: range) -> None:
        """Publish each frame's messages, then its /clock (the publishers held meanwhile)."""
        with held(self._held):
            self._publish_frames(frames)

    def _publish_frames(self, frames: range) -> None:
        cursor, played = self.cursor, 0
        self._flow.start()
        parts = ([(frames[:-1], self._run), (frames[-1:], self._lockstep_run)]
                 if frames and self._server.barrier_applies() else [(frames, self._run)])
        try:
            for part, run in parts:
                self._unacknowledged |= run is self._run and bool(part)
                cursor.play(part, self._axes.bag_start_ns, run)
                played += len(part)
        except READ_ERRORS as error:
            self._read_failed(error)
            played += cursor.frames_played
            cursor.seek(self._bag.end_ns + 1)
            # The frames not published yet, without data: time goes on.
            for time_ns in frames[played:]:
                self._publish_clock(time_ns)
        self._progressed()

    def _publish_acknowledged(self, time_ns: int) -> None:
        """Publish a frame's /clock once its messages are acknowledged (or their readers stall)."""
        stalled = []
        if self._unacknowledged:  # else the last wait covered all: no look at every writer
            self._unacknowledged = False
            stalled = self._acks.wait_now(self._publishers, DATA_ACK_TIMEOUT_NS)
        if stalled:
            self._server.get_logger().warning(
                f'frame at {self._server.clock_ns(time_ns)} ns goes out with its data not '
                f'acknowledged by every reliable reader of: {", ".join(stalled)}',
                throttle_duration_sec=5.0)
        self._publish_clock(time_ns)

    def publish_time(self, time_ns: int) -> None:
        """Publish /clock at ``time_ns`` (timeline time)."""
        with held(self._held):
            self._publish_clock(time_ns)
        self._progressed()

    def publishers(self) -> list:
        """Return the publishers of /clock and of the bag's topics."""
        return [self._server.clock_publisher, *self._publishers]

    def close(self) -> None:
        """End the read-ahead process; from now on a publish raises."""
        self._reader.close()
        self._run = self._publish_clock = publisher_destroyed
        self.progress.close()

    def _on_change(self, change: Change) -> None:
        if change.reset:
            # Every reset moves the bag to the timeline's new time (zero: the bag's start).
            self.cursor.seek(self._axes.to_bag(change.time_after_ns))
            self.progress.restart(change.time_after_ns, self.cursor.handed_out, change.epoch)
            self._ended = False

    def _progressed(self) -> None:
        timeline = self._server.timeline
        if timeline.free_running:
            playback = Playback.PLAYING
        else:
            playback = Playback.STEPPED if timeline.status().sync else Playback.PAUSED
        self.progress.update(timeline.time_ns, self.cursor.handed_out, playback)

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
        self._server.get_logger().error(
            f'reading the bag failed: {error}; no more data plays until a seek or reset')

    def limit(self, limit: int) -> int:
        """
        Return how many of the next ``limit`` frames go out in one run: up to the bag's end.

        The frame at or after the last stamp ends a run, so that a loop or the pause at the
        end is applied before a frame past the bag goes out (free run, as fast as possible
        too).
        """
        timeline = self._server.timeline
        left_ns = self.end_ns - timeline.time_ns
        if left_ns <= 0:
            return limit
        return max(1, min(limit, -(-left_ns // timeline.time_step_ns)))

    def end_of_frames(self) -> Optional[Callable[[], object]]:
        """
        Return what the end of the bag asks for once the frames out are finished, or None.

        Loop: back to the bag's start (a reset). Else free run and real time pause there, and
        sync mode steps on without data. The frame engine applies it at the frame boundary.
        """
        server = self._server
        timeline = server.timeline
        # Time at or past the bag's last stamp: every message has been handed out (a frame
        # plays all up to its time). The cursor may not know yet, when its batch was used up
        # exactly by that frame: asked, a frame past the end would go out before a loop.
        if timeline.time_ns < self.end_ns:
            self._ended = False
            return None
        ended, self._ended = self._ended, True
        if self.loop:
            return lambda: timeline.seek(0, 'loop: end of the bag reached')
        if timeline.free_running:
            return self._pause_at_end
        if not ended:
            server.get_logger().info('end of the bag: time steps on without data')
        return None

    def _pause_at_end(self) -> None:
        server = self._server
        timeline = server.timeline
        if not timeline.free_running:
            return  # paused or stepped meanwhile
        self.progress.end_line()  # the last line stays above the log's
        timeline.set_paused(True)
        server.get_logger().info(
            f'end of the bag: paused at {server.clock_ns(timeline.time_ns)} ns '
            '(~/seek or ~/reset and ~/resume to play again, or set loop)')


def check_bag_start(start_time) -> None:
    """Refuse a start_time other than 0: a bag player's time is the bag's."""
    if start_time_from_value(start_time) != 0:
        raise Refused(
            f"a bag player's time is the bag's: start_time must be 0, got {start_time!r} (the "
            'bag sets where /clock starts; --start-at-zero starts it at 0)')


def check_bag_clock_rate(max_clock_rate) -> None:
    """Refuse a /clock rate cap: a bag player publishes every frame's data before its /clock."""
    if max_clock_rate_from_float(max_clock_rate) != 0:
        raise Refused(
            f'the bag player does not cap /clock: max_clock_rate must be 0, got '
            f'{max_clock_rate!r} (every frame goes out with its data; a larger time_step '
            'publishes fewer frames)')


#: The parameters a bag player takes fewer values of than the clock server, and their checks.
BAG_CHECKS = {'start_time': check_bag_start, 'max_clock_rate': check_bag_clock_rate}


class BagPlayer:
    """
    Replay a bag as the clock server: /clock is the bag's time, in every clock mode.

    :attr:`node` is the :class:`ClockServer` it composes, with ``~/seek``, ``~/get_progress``
    and ``loop`` added.
    ``start_at_zero``: /clock starts at zero instead of the bag's first timestamp.
    ``show_progress``: a progress line on stderr if it is the user's terminal, else in the log
    (every 5 s while playing; :func:`~sim_clock.bag.progress.choose_output`);
    ``~/get_progress`` answers either way.
    ``start_offset_ns``: the timeline starts this long after the bag's first stamp, and resets
    and loops go back there (``ros2 bag play --start-offset``).
    ``qos_overrides``: the publishers' QoS by topic, instead of the one adapted to the bag's.
    ``delay_ns``: wall time for which the player holds time (``paused``) once it is up.
    """

    def __init__(self, bag: Bag, *, start_at_zero: bool = False, show_progress: bool = True,
                 start_offset_ns: int = 0,
                 qos_overrides: Optional[Dict[str, QoSProfile]] = None, delay_ns: int = 0,
                 **kwargs):
        self.bag = bag
        self._show_progress = show_progress
        self._qos_overrides = qos_overrides
        start_ns = bag.start_ns + start_offset_ns
        #: /clock at the start (the timeline's zero): the bag's first stamp plus the offset.
        axes = Axes(clock_offset_ns=0 if start_at_zero else start_ns, bag_start_ns=start_ns)
        # Started first: the child imports and opens the bag while the node comes up.
        self.reader = ReadAhead(bag)
        self.frames = None
        try:
            self.node = ClockServer(sink=self._make_frames, axes=axes, **kwargs)
            for name, check in BAG_CHECKS.items():
                check(self.node.get_parameter(name).value)
        except BaseException:
            self.reader.close()
            raise
        node = self.node
        self.frames.loop = node.declare_parameter('loop', False, LOOP_DESCRIPTOR).value
        node.add_on_set_parameters_callback(self._refuse_bag_values)
        node.add_post_set_parameters_callback(self._apply_loop)
        node.create_service(Seek, '~/seek', self._on_seek, qos_profile=SERVICE_QOS)
        node.create_service(GetProgress, '~/get_progress', self._on_get_progress,
                            qos_profile=SERVICE_QOS)
        self._log_start()
        self._delay_timer = None
        self._own_change = False
        if delay_ns > 0:
            self._hold_for(delay_ns)

    def _hold_for(self, delay_ns: int) -> None:
        """
        Hold time (``paused``) for ``delay_ns`` of wall time, then let it go as it was.

        Nothing has played yet. Paused already (``paused`` true, ``-p/--start-paused``): it
        stays so. A change of ``paused`` meanwhile (``~/resume``, ``ros2 param set``) ends the
        delay there.
        """
        node = self.node
        node.get_logger().info(f'delay: playback starts in {format_seconds(delay_ns)} s')
        if node.get_parameter('paused').value:
            return
        self._set_own_paused(True)
        node.add_post_set_parameters_callback(self._end_delay_on_pause_change)
        self._delay_timer = node.create_timer(
            delay_ns / NS_PER_SEC, self._on_delay_over, clock=node.steady_clock)

    def _set_own_paused(self, paused: bool) -> None:
        self._own_change = True
        try:
            [result] = self.node.set_parameters([Parameter('paused', value=paused)])
        finally:
            self._own_change = False
        if not result.successful:
            self.node.get_logger().error(f'delay: paused={paused} refused: {result.reason}')

    def _end_delay_on_pause_change(self, parameters: List[Parameter]) -> None:
        if self._delay_timer is not None and not self._own_change and any(
                parameter.name == 'paused' for parameter in parameters):
            self._cancel_delay()

    def _on_delay_over(self) -> None:
        self._cancel_delay()
        self.node.get_logger().info('delay over: playback starts')
        self._set_own_paused(False)

    def _cancel_delay(self) -> None:
        if self._delay_timer is not None:
            self.node.destroy_timer(self._delay_timer)
            self._delay_timer = None

    def _make_frames(self, server: ClockServer) -> BagFrames:
        self.frames = BagFrames(server, self.bag, self.reader, self._show_progress,
                                self._qos_overrides)
        return self.frames

    def _log_start(self) -> None:
        bag, logger, node = self.bag, self.node.get_logger(), self.node
        for topic in bag.skipped.clock:
            logger.info(f'{topic} in the bag is not republished: this node publishes /clock')
        for type_name, (topics, reason) in bag.skipped.unknown_types.items():
            logger.warning(f'skipping {", ".join(topics)}: {reason}')  # one per type
        if bag.missing_topics:
            logger.warning(f'not in the bag: {", ".join(bag.missing_topics)}')
        playing = sum(topic.message_count for topic in bag.topics)
        logger.info(
            f'playing {bag.path}: {len(bag.topics)} topics, {playing} messages, bag time '
            f'{node.axes.bag_start_ns} to {bag.end_ns} ns as /clock {node.clock_ns(0)} to '
            f'{node.clock_ns(self.frames.end_ns)} ns')

    def seek(self, target_ns: int) -> SeekOutcome:
        """Go to /clock time ``target_ns`` within the bag (a reset); refuse outside it."""
        node = self.node
        timeline = node.timeline
        elapsed = node.axes.from_clock(target_ns)
        if not 0 <= elapsed <= self.frames.end_ns:
            success, message = False, (
                f'seek time {target_ns} ns is outside the bag: /clock runs from '
                f'{node.clock_ns(0)} to {node.clock_ns(self.frames.end_ns)} ns')
        else:
            node.apply_change(lambda: timeline.seek(elapsed, f'~/seek to {target_ns} ns'))
            success, message = True, f'at {target_ns} ns (epoch {timeline.epoch})'
        return SeekOutcome(success, message, node.clock_ns(timeline.time_ns), timeline.epoch)

    def _on_seek(self, request, response):
        return fill(response, self.seek(join_ns(request.time)))

    def _on_get_progress(self, request, response):
        return fill(response, self.frames.progress.report())

    @staticmethod
    def _refuse_bag_values(parameters: List[Parameter]) -> SetParametersResult:
        try:
            for parameter in parameters:
                if parameter.name in BAG_CHECKS:
                    BAG_CHECKS[parameter.name](parameter.value)
        except Refused as refused:
            return SetParametersResult(successful=False, reason=refused.reason)
        return SetParametersResult(successful=True)

    def _apply_loop(self, parameters: List[Parameter]) -> None:
        for parameter in parameters:
            if parameter.name == 'loop':
                self.frames.loop = bool(parameter.value)


def main(args=None) -> int:
    """Open the bags, then play them until Ctrl-C or SIGTERM; return the exit code."""
    own_arguments, argv = split_command_line(sys.argv if args is None else args)
    options = parse_arguments(own_arguments[1:])
    if options.log_level is not None:
        argv = [*argv, '--ros-args', '--log-level', options.log_level]
    try:
        check_ros_args(argv)
    except InvalidRosArguments as error:
        rclpy.logging.get_logger(NODE_NAME).fatal(str(error))
        return 2
    # The bags are opened (and their first messages read) before any ROS entity exists.
    try:
        bag = open_bags(options)
    except BagError as error:
        rclpy.logging.get_logger(NODE_NAME).fatal(str(error))
        return 1
    overrides = [Parameter(name, value=value) for name, value in options.parameters.items()]
    try:
        if options.follow_clock:
            # Imported here: the follower builds on this module's publishing choices.
            from sim_clock.bag.follow import follow_clock
            return follow_clock(bag, argv, start_at_zero=options.start_at_zero)
        return spin_until_stopped(
            lambda: BagPlayer(
                bag, start_at_zero=options.start_at_zero, show_progress=options.show_progress,
                start_offset_ns=options.start_offset_ns, qos_overrides=options.qos_overrides,
                delay_ns=options.delay_ns, parameter_overrides=overrides,
                cli_args=options.ros_arguments() or None).node,
            argv, logger_name=NODE_NAME)
    finally:
        bag.close()


def open_bags(options: PlayOptions) -> Bag:
    """Open the bags of ``options``; raise BagError if they cannot play as asked."""
    paths = [path for path, _ in options.bags]
    storage_ids = [storage_id for _, storage_id in options.bags]
    bag = Bag(paths, options.topic_filter, storage_ids=storage_ids)
    start_ns, end_ns = bag.start_ns + options.start_offset_ns, bag.end_ns
    last_ns = options.last_bag_ns(bag.start_ns)
    if last_ns is not None:
        bag.end_at(last_ns)
    if start_ns > end_ns:
        bag.close()
        raise BagError(
            f'--start-offset {format_seconds(options.start_offset_ns)} s starts after the end '
            f'of {bag.path!r}: it is {format_seconds(end_ns - bag.start_ns)} s long')
    if last_ns is not None and last_ns < start_ns:
        bag.close()
        raise BagError(
            f'nothing would play: playback ends at bag time {last_ns} ns '
            '(--playback-until-sec/--playback-until-nsec/--playback-duration), before it '
            f'starts at {start_ns} ns')
    return bag
