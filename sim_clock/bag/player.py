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
sink, :class:`~sim_clock.bag.frame_sink.BagFrames`, that publishes each frame's messages,
raw, before its ``/clock``. A step therefore answers once all data up to the new time is out.
Every reset rewinds the bag to the timeline's new time (``~/seek`` is a reset to a given time,
``loop`` a reset at the end). The sink feeds a :class:`~sim_clock.bag.progress.Progress`
(``~/get_progress``, and a line on the user's terminal or in the log).
"""

from dataclasses import dataclass
import sys
from typing import Dict
from typing import List
from typing import Optional

from rcl_interfaces.msg import ParameterDescriptor
from rcl_interfaces.msg import SetParametersResult
import rclpy
from rclpy.clock import Clock
from rclpy.clock import ClockType
from rclpy.duration import Duration
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from sim_clock.bag.accounting import Account
from sim_clock.bag.accounting import account
from sim_clock.bag.accounting import describe_left_out
from sim_clock.bag.accounting import STRICT_EXIT_CODE
from sim_clock.bag.frame_sink import BagFrames
from sim_clock.bag.keyboard import Keyboard
from sim_clock.bag.keyboard import user_terminal
from sim_clock.bag.play_options import parse_arguments
from sim_clock.bag.play_options import PlayOptions
from sim_clock.bag.playback_services import PlaybackServices
from sim_clock.bag.read_ahead import ReadAhead
from sim_clock.bag.reader import Bag
from sim_clock.bag.reader import BagError
from sim_clock.bag.reader import READ_ERRORS
from sim_clock.core.axes import Axes
from sim_clock.core.rules import Refused
from sim_clock.core.rules import start_time_from_value
from sim_clock.core.state import Change
from sim_clock.core.state import ChangeKind
from sim_clock.core.units import format_seconds
from sim_clock.core.units import join_ns
from sim_clock.core.units import NS_PER_SEC
from sim_clock.node.outcomes import Answer
from sim_clock.node.publishing import SinkParts
from sim_clock.node.runtime import spin_until_stopped
from sim_clock.node.server import ClockServer
from sim_clock.node.services import fill
from sim_clock.process.arguments import check_ros_args
from sim_clock.process.arguments import InvalidRosArguments
from sim_clock.process.arguments import split_command_line
from sim_clock.srv import GetProgress
from sim_clock.srv import Seek
from sim_clock.wire.names import NODE_NAME
from sim_clock.wire.names import SERVICE_QOS

LOOP_DESCRIPTOR = ParameterDescriptor(
    description='At the end of the bag, start again from its beginning (a reset: epoch + 1). '
                'Off: free run and real-time mode stop at the end (see stay_at_end); sync mode '
                'steps on, without data.')
STAY_AT_END_DESCRIPTOR = ParameterDescriptor(
    description='Free run and real-time mode, without loop: at the end of the bag pause there '
                'and keep serving. Off: pause, and the player ends (exit code 0), as ros2 bag '
                'play does. Sync mode always keeps serving.')
#: At the end of the bag, the longest the player waits for its readers' acknowledgements before
#: it ends, unless --wait-for-all-acked says otherwise: a reader still taking the last frames
#: gets them (ros2 bag play does not wait unless asked).
END_WAIT_NS = 2_000_000_000
#: How often the keys typed are taken, in s: a key acts within this.
KEYS_PERIOD_S = 0.05
#: The player's own parameters: name -> (default, descriptor, the attribute of its frame sink).
PLAYER_PARAMETERS = {
    'loop': (False, LOOP_DESCRIPTOR, 'loop'),
    'stay_at_end': (False, STAY_AT_END_DESCRIPTOR, 'stay_at_end'),
}


@dataclass
class SeekOutcome(Answer):
    """The outcome of ``~/seek``: where time is after the call."""

    clock_ns: int
    epoch: int


def check_bag_start(start_time) -> None:
    """Refuse a start_time other than 0: a bag player's time is the bag's."""
    if start_time_from_value(start_time) != 0:
        raise Refused(
            f"a bag player's time is the bag's: start_time must be 0, got {start_time!r} (the "
            'bag sets where /clock starts; --start-at-zero starts it at 0)')


#: The parameters a bag player takes fewer values of than the clock server, and their checks.
BAG_CHECKS = {'start_time': check_bag_start}


class BagPlayer:
    """
    Replay a bag as the clock server: /clock is the bag's time, in every clock mode.

    :attr:`node` is the :class:`ClockServer` it composes, with ``~/seek``, ``~/get_progress``,
    rosbag2's player services (:class:`PlaybackServices`), ``loop`` and ``stay_at_end`` added.
    ``start_at_zero``: /clock starts at zero instead of the bag's first timestamp.
    ``show_progress``: a progress line on stderr if it is the user's terminal, else in the log
    (every 5 s while playing; :func:`~sim_clock.bag.progress.choose_output`);
    ``~/get_progress`` answers either way.
    ``start_offset_ns``: the timeline starts this long after the bag's first stamp, and resets
    and loops go back there (``ros2 bag play --start-offset``).
    ``qos_overrides``: the publishers' QoS by topic, instead of the one adapted to the bag's.
    ``delay_ns``: wall time for which the player holds time (``paused``) once it is up, and
    again at each loop in free run or real time (``ros2 bag play --delay``).
    ``keyboard``: read keys from standard input where it is the user's terminal
    (:mod:`sim_clock.bag.keyboard`).
    ``wait_for_all_acked_ns``: at the end of the bag, before the player ends, how long it
    waits for every reliable reader to acknowledge every message (0: as long as it takes), as
    ``ros2 bag play --wait-for-all-acked``; None: :data:`END_WAIT_NS`.
    """

    def __init__(self, bag: Bag, *, start_at_zero: bool = False, show_progress: bool = True,
                 start_offset_ns: int = 0,
                 qos_overrides: Optional[Dict[str, QoSProfile]] = None, delay_ns: int = 0,
                 wait_for_all_acked_ns: Optional[int] = None, keyboard: bool = False,
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
        for name, (default, descriptor, attribute) in PLAYER_PARAMETERS.items():
            setattr(self.frames, attribute,
                    bool(node.declare_parameter(name, default, descriptor).value))
        self._wait_for_all_acked_ns = wait_for_all_acked_ns
        self.frames.on_end = self._end
        node.add_on_set_parameters_callback(self._refuse_bag_values)
        node.add_post_set_parameters_callback(self._apply_player_parameters)
        node.create_service(Seek, '~/seek', self._on_seek, qos_profile=SERVICE_QOS)
        node.create_service(GetProgress, '~/get_progress', self._on_get_progress,
                            qos_profile=SERVICE_QOS)
        self._playback = PlaybackServices(node, node.control, node.engine.steps.step,
                                          node.timeline, self.frames, node.axes, self._end)
        self._log_start()
        self._keyboard = self._keys_timer = None
        if keyboard and user_terminal(_stdin_fd()):
            self._keyboard = Keyboard(_stdin_fd(), self._playback, node.get_logger().info)
            self._keys_timer = node.create_timer(
                KEYS_PERIOD_S, self._keyboard.poll, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self._delay_timer = None
        self._own_change = False
        self._delay_ns = delay_ns
        self._loop_held = False
        if delay_ns > 0:
            # A service's pause or resume reaches the timeline's changes only; a set of
            # paused, even to the value it has, the parameter callbacks.
            node.add_change_listener(self._end_delay_on_pause_or_resume)
            node.add_post_set_parameters_callback(self._end_delay_on_pause_change)
            self.frames.hold_at_loop = True
            self.frames.on_loop = self._delay_after_loop
            self._hold_at_start()

    def _hold_at_start(self) -> None:
        """
        Hold time (``paused``) for the delay, then let it go as it was.

        Nothing has played yet. Paused already (``paused`` true, ``-p/--start-paused``): it
        stays so. A change of ``paused`` meanwhile (``~/resume``, ``ros2 param set``) ends the
        delay there.
        """
        self.node.get_logger().info(
            f'delay: playback starts in {format_seconds(self._delay_ns)} s')
        if self.node.get_parameter('paused').value:
            return
        self._set_own_paused(True)
        self._start_delay()

    def _delay_after_loop(self) -> None:
        """
        Note that a loop holds time at the start (the frame sink paused it with the loop).

        Called inside the loop's change; its pause is dispatched after it, and the delay starts
        there (:meth:`_end_delay_on_pause_or_resume`), so that pause does not end it.
        """
        self._loop_held = True

    def _start_delay(self) -> None:
        self._cancel_delay()
        # A steady clock of its own: the node's holds 8 timers already, and rclpy's
        # EventsExecutor warns at each timer added to a clock that has 8.
        self._delay_timer = self.node.create_timer(
            self._delay_ns / NS_PER_SEC, self._on_delay_over,
            clock=Clock(clock_type=ClockType.STEADY_TIME))

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

    def _end_delay_on_pause_or_resume(self, change: Change) -> None:
        if self._loop_held and change.kind is ChangeKind.PAUSE:
            self._loop_held = False
            self.node.get_logger().info(
                f'delay: the loop plays in {format_seconds(self._delay_ns)} s')
            self._start_delay()
            return
        if self._delay_timer is not None and not self._own_change and change.kind in (
                ChangeKind.PAUSE, ChangeKind.RESUME):
            self._cancel_delay()

    def _on_delay_over(self) -> None:
        self._cancel_delay()
        self.node.get_logger().info('delay over: playback starts')
        self._set_own_paused(False)

    def _cancel_delay(self) -> None:
        if self._delay_timer is not None:
            self.node.destroy_timer(self._delay_timer)
            self._delay_timer = None

    def _make_frames(self, parts: SinkParts) -> BagFrames:
        self.frames = BagFrames(parts, self.bag, self.reader, self._show_progress,
                                self._qos_overrides)
        return self.frames

    def _log_start(self) -> None:
        bag, logger, node = self.bag, self.node.get_logger(), self.node
        for path, notes in bag.notes:  # one warning per bag
            logger.warning(f'{path}: read from its data files, which metadata.yaml disagrees '
                           f'with: {"; ".join(notes)}')
        for topic in bag.skipped.clock:
            logger.info(f'{topic} in the bag is not republished: this node publishes /clock')
        for type_name, (topics, reason) in bag.skipped.unknown_types.items():
            logger.warning(f'skipping {", ".join(topics)}: {reason}')  # one per type
        if bag.missing_topics:
            logger.warning(f'not in the bag: {", ".join(bag.missing_topics)}')
        left_out = describe_left_out(bag)
        logger.info(
            f'playing {bag.path}: {len(bag.topics)} topics, {bag.playing_count} messages'
            f'{f" of {bag.message_count} ({left_out})" if left_out else ""}, bag time '
            f'{node.axes.bag_start_ns} to {bag.end_ns} ns as /clock {node.clock_ns(0)} to '
            f'{node.clock_ns(self.frames.end_ns)} ns')

    def account(self) -> Account:
        """Return what played of the bag and what was left out (:class:`Account`)."""
        return account(self.bag, self.frames.progress.report().messages_out,
                       self.frames.unheard())

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
            node.changes.apply(lambda: timeline.seek(elapsed, f'~/seek to {target_ns} ns'))
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

    def _apply_player_parameters(self, parameters: List[Parameter]) -> None:
        for parameter in parameters:
            if parameter.name in PLAYER_PARAMETERS:
                setattr(self.frames, PLAYER_PARAMETERS[parameter.name][2], bool(parameter.value))

    def _end(self) -> None:
        """End the player (the end of its bag, ~/stop) once its readers have every message."""
        timeout_ns = self._wait_for_all_acked_ns
        if timeout_ns is None:
            timeout_ns = END_WAIT_NS
        timeout = Duration(nanoseconds=timeout_ns) if timeout_ns else Duration(seconds=-1)
        unacked = [publisher.topic_name for publisher in self.frames.publishers()
                   if not publisher.wait_for_all_acked(timeout)]
        if unacked:
            self.node.get_logger().warning(
                f'ending with messages not acknowledged by every reader within '
                f'{format_seconds(timeout_ns)} s on {", ".join(unacked)} '
                '(--wait-for-all-acked TIMEOUT waits longer)')
        self.node.done = True


def _stdin_fd() -> int:
    """Return standard input's file descriptor, or -1 where there is none."""
    try:
        return sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        return -1


def main(args=None) -> int:
    """Open the bags, then play them until Ctrl-C or SIGTERM; return the exit code."""
    own_arguments, argv = split_command_line(sys.argv if args is None else args)
    options = parse_arguments(own_arguments[1:])
    if options.info:
        from sim_clock.bag.info import print_info  # only --info loads it
        return print_info([path for path, _ in options.bags],
                          [storage_id for _, storage_id in options.bags], options.topic_filter)
    if options.log_level is not None:
        argv = [*argv, '--ros-args', '--log-level', options.log_level]
    try:
        check_ros_args(argv)
    except InvalidRosArguments as error:
        rclpy.logging.get_logger(NODE_NAME).fatal(str(error))
        return 2
    if options.without_effect:
        rclpy.logging.get_logger(NODE_NAME).info(
            'accepted without effect here: ' + '; '.join(options.without_effect))
    # The bags are opened (and their first messages read) before any ROS entity exists.
    try:
        bag = open_bags(options)
    except BagError as error:
        rclpy.logging.get_logger(NODE_NAME).fatal(str(error))
        return 1
    overrides = [Parameter(name, value=value) for name, value in options.parameters.items()]
    try:
        if options.follow_clock:
            # Imported here: only --follow-clock loads the follower.
            from sim_clock.bag.follower import follow_clock
            return follow_clock(bag, argv, start_at_zero=options.start_at_zero)
        players = []

        def make_player():
            players.append(BagPlayer(
                bag, start_at_zero=options.start_at_zero, show_progress=options.show_progress,
                start_offset_ns=options.start_offset_ns, qos_overrides=options.qos_overrides,
                delay_ns=options.delay_ns, wait_for_all_acked_ns=options.wait_for_all_acked_ns,
                keyboard=options.keyboard_controls, parameter_overrides=overrides,
                cli_args=options.ros_arguments() or None))
            return players[-1].node
        code = spin_until_stopped(make_player, argv, logger_name=NODE_NAME)
        if code or not players:
            return code
        return _end_account(players[0].account(), options.strict)
    finally:
        bag.close()


def _end_account(result: Account, strict: bool) -> int:
    """Log what played and what was left out; return the exit code (--strict: 3 if short)."""
    logger = rclpy.logging.get_logger(NODE_NAME)
    short = strict and result.short
    if short:
        logger.error(result.line())
    elif result.lost or result.reached_nobody:
        logger.warning(result.line())
    else:
        logger.info(result.line())
    return STRICT_EXIT_CODE if short else 0


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
    if options.start_offset_ns or last_ns is not None:
        try:
            bag.count_outside(start_ns, last_ns)
        except READ_ERRORS as error:
            bag.close()
            raise BagError(f'bag {bag.path!r} is damaged: {error}') from None
    return bag
