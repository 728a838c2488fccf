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
The bag player: the clock server whose timeline is a bag's.

:class:`BagPlayer` is a :class:`sim_clock.server.ClockServer` (same node name, parameters and
services, every clock mode) whose frames also release the bag: each frame publishes every bag
message stamped up to the frame's time, raw, on its topic, then the frame's ``/clock``. In sync
mode a ``~/step`` therefore answers only after all data up to the new time is out. The
timeline's time counts from the bag's first timestamp, so every reset (``~/reset``, a mode or
sync change) rewinds the bag to its start, ``~/seek`` is a reset to a given time, and ``loop``
is a reset at the end. The bag is read ahead in a child process (:class:`sim_clock.bag.ReadAhead`)
while this one publishes, so reading and publishing use two cores, and frames are played by a
loop in C (:mod:`sim_clock._replay`).
"""

import argparse
from array import array
import itertools
import sys
from typing import List

from rcl_interfaces.msg import ParameterDescriptor
import rclpy
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rclpy.utilities import remove_ros_args
from rosbags.interfaces import QosDurability
from rosbags.interfaces import QosReliability
from sim_clock import _replay
from sim_clock.bag import Bag
from sim_clock.bag import BagError
from sim_clock.bag import Cursor
from sim_clock.bag import EMPTY_BATCH
from sim_clock.bag import python_run
from sim_clock.bag import READ_ERRORS
from sim_clock.bag import Run
from sim_clock.server import clock_in_c
from sim_clock.server import clock_publisher
from sim_clock.server import ClockServer
from sim_clock.server import NODE_NAME
from sim_clock.server import publisher_destroyed
from sim_clock.server import spin_until_stopped
from sim_clock.srv import Seek
from sim_clock.timeline import NS_PER_SEC

#: History depth of a volatile topic's publisher, at least: a step may release a burst of
#: messages on one topic, and a reliable writer repairs losses only within its history.
MIN_VOLATILE_DEPTH = 100
#: Where a bag has no QoS for a topic: what most publishers offer.
DEFAULT_TOPIC_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=MIN_VOLATILE_DEPTH,
    reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)

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


def native_run(publishers: array, clock_publisher: int, clock_offset_ns: int) -> Run:
    """
    Return the :data:`sim_clock.bag.Run` of packed batches in C (``sim_clock._replay.play``).

    ``publishers``: the rcl addresses of the topics' publishers (``array('Q')``, by topic
    index); ``clock_publisher``: that of /clock, whose times are the frames' plus
    ``clock_offset_ns``. Frames must be a range. The addresses must outlive the run's use.
    """
    play = _replay.play

    def run(batch, index, frames, offset_ns):
        final = batch is None
        times, topics, blob, offsets = EMPTY_BATCH if final else batch
        return play(publishers, topics, blob, offsets, times, index, frames.start, frames.step,
                    len(frames), offset_ns, clock_publisher, clock_offset_ns, final)
    return run


class BagPlayer(ClockServer):
    """A clock server whose frames publish a bag's messages, then ``/clock``."""

    def __init__(self, bag: Bag, *, start_at_zero: bool = False, **kwargs):
        # Set before the clock server starts: it publishes the first /clock while starting.
        self._bag = bag
        #: /clock at the bag's first timestamp (the timeline's zero).
        self._bag_origin_ns = 0 if start_at_zero else bag.start_ns
        self._bag_end_ns = bag.end_ns - bag.start_ns
        self._bag_cursor = None
        self._bag_ended = False
        # Started first: the child imports and opens the bag while the node comes up.
        self._bag_reader = bag.read_ahead()
        try:
            super().__init__(**kwargs)
        except BaseException:
            self._bag_reader.close()
            raise
        self._bag_loop = self.declare_parameter('loop', False, LOOP_DESCRIPTOR).value
        self.add_post_set_parameters_callback(self._apply_loop)
        self.create_service(Seek, '~/seek', self._on_seek, qos_profile=self.SERVICE_QOS)

        logger = self.get_logger()
        # By index in bag.topics, as batches name topics. The read-ahead's batches are packed
        # (one bytes object of data and offsets), and frames are played in C
        # (sim_clock._replay.play): for each frame, rcl_publish_serialized_message() (what
        # Publisher.handle.publish_raw() calls) for each of its messages, then for its /clock,
        # without a Python call per message or per frame. Safe here: one thread publishes,
        # the node keeps the publishers, and destroy_node() replaces the run first.
        self._bag_publishers = [
            self.create_publisher(topic.message_class, topic.name, qos_for(topic.offered_qos))
            for topic in bag.topics]
        pointers = array('Q', [publisher.handle.pointer for publisher in self._bag_publishers])
        #: Publishes the /clock of a timeline time.
        self._publish_bag_clock = clock_publisher(self._clock_pub, self._bag_origin_ns)
        if clock_in_c():
            self._bag_run = native_run(
                pointers, self._clock_pub.handle.pointer, self._bag_origin_ns)
        else:
            publish = _replay.publish

            def emit(batch, start, stop):
                publish(pointers, batch[1], batch[2], batch[3], start, stop)
            self._bag_run = python_run(emit, self._publish_bag_clock)
        self._bag_cursor = Cursor(self._read_bag_from, bag.start_ns)

        for topic in bag.skipped.clock:
            logger.info(f'{topic} in the bag is not republished: this node publishes /clock')
        for type_name, (topics, reason) in bag.skipped.unknown_types.items():
            # One warning per type; the reason names it.
            logger.warning(f'skipping {", ".join(topics)}: {reason}')
        if bag.missing_topics:
            logger.warning(f'not in the bag: {", ".join(bag.missing_topics)}')
        playing = sum(topic.message_count for topic in bag.topics)
        logger.info(
            f'playing {bag.path}: {len(bag.topics)} topics, {playing} messages, bag time '
            f'{bag.start_ns} to {bag.end_ns} ns as /clock {self._clock_ns(0)} to '
            f'{self._clock_ns(self._bag_end_ns)} ns')

    def _clock_ns(self, time_ns: int) -> int:
        return self._bag_origin_ns + time_ns

    def _read_bag_from(self, start_ns: int):
        """Return the read-ahead's batches from ``start_ns`` on; none after a read error."""
        try:
            batches = self._bag_reader.batches(start_ns)
            # The first batch now: a read error surfaces here, not in the next frame.
            first = next(batches, None)
        except READ_ERRORS as error:
            self._bag_read_failed(error)
            return iter(())
        return batches if first is None else itertools.chain([first], batches)

    def _bag_read_failed(self, error: Exception) -> None:
        self.get_logger().error(
            f'reading the bag failed: {error}; no more data plays until a seek or reset')

    def destroy_node(self) -> None:
        """End the read-ahead process, then destroy the node (nothing publishes after)."""
        self._bag_reader.close()
        self._bag_run = self._publish_bag_clock = publisher_destroyed
        super().destroy_node()

    # -- frames: the bag's messages up to each frame, then /clock -------------------------------

    def _publish(self, time_ns: int) -> None:
        super()._publish(self._clock_ns(time_ns))

    def _publish_frames(self, frames: range) -> None:
        if not frames:
            return
        cursor = self._bag_cursor
        try:
            cursor.play(frames, self._bag.start_ns, self._bag_run)
        except READ_ERRORS as error:
            self._bag_read_failed(error)
            cursor.seek(self._bag.end_ns + 1)
            # The frames not published yet, without data: time goes on.
            for time_ns in frames[cursor.frames_played:]:
                self._publish_bag_clock(time_ns)
        self._published(self._clock_ns(frames[-1]))

    def _on_tick(self) -> None:
        super()._on_tick()
        self._check_end()

    def step_frames(self, user_id: str, steps: int) -> tuple:
        """Step as the clock server does; then loop or note the end of the bag."""
        success, message = super().step_frames(user_id, steps)
        if success:
            self._check_end()
            message = (f'frame {self._timeline.frame}, time '
                       f'{self._clock_ns(self._timeline.time_ns)} ns')
        return success, message

    def _check_end(self) -> None:
        """Loop, or pause a free run, once the last message is out."""
        timeline = self._timeline
        if not self._bag_cursor.exhausted or timeline.time_ns < self._bag_end_ns:
            self._bag_ended = False
            return
        if self._bag_loop:
            epoch = timeline.epoch
            timeline.seek(0, 'loop: end of the bag reached')
            self._after_change(epoch)
        elif timeline.free_running:
            epoch = timeline.epoch
            timeline.set_paused(True)
            self.get_logger().info(
                f'end of the bag: paused at {self._clock_ns(timeline.time_ns)} ns '
                '(~/seek or ~/reset and ~/resume to play again, or set loop)')
            self._after_change(epoch)
            self._mirror_parameters()
        elif not self._bag_ended:
            self.get_logger().info('end of the bag: time steps on without data')
        self._bag_ended = True

    def _after_change(self, epoch_before: int) -> None:
        if self._timeline.epoch != epoch_before:
            # Every reset moves the bag to the timeline's new time (zero: the bag's start).
            self._bag_cursor.seek(self._bag.start_ns + self._timeline.time_ns)
            self._bag_ended = False
        super()._after_change(epoch_before)

    # -- services ------------------------------------------------------------------------------

    def _on_step(self, request, response):
        response = super()._on_step(request, response)
        response.clock.sec, response.clock.nanosec = divmod(
            self._clock_ns(self._timeline.time_ns), NS_PER_SEC)
        return response

    def _on_get_status(self, request, response):
        response = super()._on_get_status(request, response)
        response.clock.sec, response.clock.nanosec = divmod(
            self._clock_ns(self._timeline.time_ns), NS_PER_SEC)
        return response

    def _on_seek(self, request, response):
        target = request.time.sec * NS_PER_SEC + request.time.nanosec
        elapsed = target - self._bag_origin_ns
        timeline = self._timeline
        if not 0 <= elapsed <= self._bag_end_ns:
            response.success = False
            response.message = (
                f'seek time {target} ns is outside the bag: /clock runs from '
                f'{self._clock_ns(0)} to {self._clock_ns(self._bag_end_ns)} ns')
        else:
            epoch = timeline.epoch
            timeline.seek(elapsed, f'~/seek to {target} ns')
            self._after_change(epoch)
            response.success = True
            response.message = f'at {target} ns (epoch {timeline.epoch})'
        response.clock.sec, response.clock.nanosec = divmod(
            self._clock_ns(timeline.time_ns), NS_PER_SEC)
        response.epoch = timeline.epoch
        return response

    def _apply_loop(self, parameters: List[Parameter]) -> None:
        for parameter in parameters:
            if parameter.name == 'loop':
                self._bag_loop = bool(parameter.value)


def parse_arguments(argv: List[str]) -> argparse.Namespace:
    """Parse the command line (without ROS arguments)."""
    parser = argparse.ArgumentParser(
        prog='bag_player',
        description="Replay a rosbag2 bag (sqlite3 or MCAP) as the clock server: the bag's "
                    'time is /clock, in every clock mode. Parameters as for clock_server, '
                    'plus loop; e.g. --ros-args -p sync:=true -p time_step:=0.001')
    parser.add_argument('bag', help='rosbag2 directory, or a .mcap or .db3 file')
    parser.add_argument('--topics', nargs='+', metavar='TOPIC',
                        help='play only these topics (default: all but /clock)')
    parser.add_argument('--start-at-zero', action='store_true',
                        help="/clock starts at zero instead of the bag's first timestamp")
    return parser.parse_args(argv)


def main(args=None) -> int:
    """Open the bag, then play it until Ctrl-C or SIGTERM; return the exit code."""
    argv = sys.argv if args is None else args
    options = parse_arguments(remove_ros_args(argv)[1:])
    # The bag is opened (and its first message read) before any ROS entity exists.
    try:
        bag = Bag(options.bag, options.topics)
    except BagError as error:
        rclpy.logging.get_logger(NODE_NAME).fatal(str(error))
        return 1
    try:
        return spin_until_stopped(
            lambda: BagPlayer(bag, start_at_zero=options.start_at_zero), argv)
    finally:
        bag.close()
