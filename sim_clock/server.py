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
The clock server node: publishes ``/clock`` and serves the control services.

The node is thin: parameters and service requests become calls on a
:class:`sim_clock.timeline.Timeline`, and the frames it returns become ``/clock`` messages.
All timing comes from steady (wall) timers and the steady clock, never from ROS time, so the
server behaves the same whether it is started with ``use_sim_time`` true or false and never
waits on its own clock.
"""

import functools
import os
import signal
import struct
import time
from typing import Callable
from typing import List
from typing import Optional

from rcl_interfaces.msg import FloatingPointRange
from rcl_interfaces.msg import ParameterDescriptor
from rcl_interfaces.msg import SetParametersResult
import rclpy
from rclpy.clock import Clock
from rclpy.clock import ClockType
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rclpy.serialization import serialize_message
from rosgraph_msgs.msg import Clock as ClockMsg
from sim_clock import _replay
from sim_clock import simulation_interfaces
from sim_clock.diagnostics import ClockDiagnostics
from sim_clock.srv import GetStatus
from sim_clock.srv import Step
from sim_clock.srv import SyncModeCmd
from sim_clock.timeline import MAX_REAL_TIME_FACTOR
from sim_clock.timeline import MAX_TIME_NS
from sim_clock.timeline import MAX_TIME_STEP_NS
from sim_clock.timeline import Mode
from sim_clock.timeline import MODE_NAMES
from sim_clock.timeline import NS_PER_MS
from sim_clock.timeline import NS_PER_SEC
from sim_clock.timeline import owner_timeout_from_seconds
from sim_clock.timeline import parse_mode
from sim_clock.timeline import real_time_factor_from_float
from sim_clock.timeline import Refused
from sim_clock.timeline import time_step_from_seconds
from sim_clock.timeline import Timeline
from std_srvs.srv import SetBool
from std_srvs.srv import Trigger

try:
    from rclpy.experimental import EventsExecutor
except ImportError:  # an rclpy without it
    EventsExecutor = None

NODE_NAME = 'sim_clock'
CLOCK_TOPIC = '/clock'

#: The /clock profile. Reliable, because a best-effort publisher is invisible to reliable
#: subscribers, while the time sources of rclpy and rclcpp (best effort, depth 1) match a
#: reliable publisher too. Volatile, so a late joiner gets the next publication (at most one
#: publish period away) rather than a stale backlog. A history of 10000 samples lets the
#: middleware repair losses in a burst of frames (a long step) for reliable subscribers that
#: keep every frame: a reader learns of a lost sample only at the writer's next heartbeat
#: (Fast DDS: every 3 s), and 1000 samples were overwritten before that when a starved
#: subscriber fell behind a holder stepping thousands of frames a second (test/test_load.py).
#: Acknowledged samples leave the history, so memory follows the backlog (about 140 bytes a
#: sample), not the depth.
CLOCK_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST,
    depth=10_000,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.VOLATILE,
)

#: The profile of every service of ours: reliable, keep last 1000, as rclpy's parameter
#: services have it ("so that requests do not get lost"). The default (depth 10) loses answers
#: under load: one response writer serves every client of a service, and a starved client
#: whose answer fell out of a 10-sample history never gets it (test/test_load.py).
SERVICE_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST,
    depth=1000,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.VOLATILE,
)

#: Free run is paced by a steady timer; frames due faster than this are published in batches.
MIN_TICK_NS = 1_000_000
#: The most frames one timer callback publishes: services are still answered between batches.
FRAMES_PER_TICK = 100
#: Free run at real_time_factor 0 publishes frames in batches of FULL_SPEED_BATCH_NS (checking
#: the time every FULL_SPEED_CHUNK frames), one batch between two events of the spin loop, or
#: one per FULL_SPEED_TICK_NS tick when no loop drives it (see ClockServer.drive_full_speed).
FULL_SPEED_BATCH_NS = 200_000
FULL_SPEED_CHUNK = 10
FULL_SPEED_TICK_NS = 1_000_000
#: The std_srvs services act as this user: they may step only while nobody holds sync mode.
ANONYMOUS_USER = ''

MAX_PUBLISH_RATE = 10_000.0
MIN_PUBLISH_RATE = 0.1

DEFAULTS = {
    'mode': Mode.SIMULATION.value,
    'sync': False,
    'time_step': 0.01,
    'real_time_factor': 1.0,
    'publish_rate': 100.0,
    'paused': False,
    'owner_timeout': 0.0,
}

_DOUBLE_PARAMETERS = ('time_step', 'real_time_factor', 'publish_rate', 'owner_timeout')


def _descriptor(description: str, *, low: float = None, high: float = None,
                constraints: str = '') -> ParameterDescriptor:
    descriptor = ParameterDescriptor(
        description=description, additional_constraints=constraints)
    if low is not None:
        descriptor.floating_point_range = [
            FloatingPointRange(from_value=low, to_value=high, step=0.0)]
    return descriptor


DESCRIPTORS = {
    'mode': _descriptor(
        'How time advances: real_time follows the wall clock; simulation advances in frames '
        'of time_step (free run, or only by steps when sync is on). A change resets time to 0.',
        constraints='one of: ' + ', '.join(MODE_NAMES)),
    'sync': _descriptor(
        'Simulation mode: time advances only by ~/step calls. A change resets time to 0. '
        'Setting it true in real_time mode switches to simulation.',
        constraints='true needs mode simulation (switched to if needed)'),
    'time_step': _descriptor(
        'Length of one simulation frame, in seconds (converted once to integer ns).',
        low=1e-9, high=float(MAX_TIME_STEP_NS // NS_PER_SEC), constraints='s, > 0'),
    'real_time_factor': _descriptor(
        'Free-run pace: simulated seconds per wall second. 1.0 wall pace, 2.0 twice as fast, '
        '0 as fast as possible.',
        low=0.0, high=float(MAX_REAL_TIME_FACTOR), constraints='0 = as fast as possible'),
    'publish_rate': _descriptor(
        '/clock rate in real_time mode and while time does not advance (paused, sync idle), '
        'in Hz.',
        low=MIN_PUBLISH_RATE, high=MAX_PUBLISH_RATE, constraints='Hz'),
    'paused': _descriptor(
        'Freeze real-time and free-run time (/clock keeps being published, unchanged).'),
    'owner_timeout': _descriptor(
        'Seconds without a call from the sync holder after which its hold lapses (sync stays '
        'on, anyone may step or take it). 0: a hold never lapses.',
        low=0.0, high=float(MAX_TIME_STEP_NS // NS_PER_SEC), constraints='s, 0 = never'),
}


#: The encapsulation header of CDR, little-endian: what sim_clock._replay writes.
CDR_LITTLE_ENDIAN = b'\x00\x01\x00\x00'
_CLOCK_LAYOUT = struct.Struct('<4siI')


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

    Serialized as 12 bytes of CDR (encapsulation header, sec, nanosec) and published raw, by
    ``sim_clock._replay.publish_clock`` in C: a tenth of the cost of ``Publisher.publish``,
    which converts the message first. The layout is checked against rclpy's serialization
    (:func:`clock_header`); should it differ, the function converts a message as
    ``Publisher.publish`` does. A publisher without an rcl address (``handle.pointer``) gets
    the same bytes through ``handle.publish_raw``. The C function holds the publisher's
    address: the node replaces the function before it destroys the publisher
    (:meth:`ClockServer.destroy_node`).
    """
    header = clock_header()
    if header is not None:
        pointer = getattr(publisher.handle, 'pointer', None)
        if pointer and clock_in_c():
            return functools.partial(_replay.publish_clock, pointer, offset_ns)
        publish_raw = publisher.handle.publish_raw
        pack = _CLOCK_LAYOUT.pack

        def publish_clock(time_ns: int) -> None:
            sec, nanosec = divmod(time_ns + offset_ns, NS_PER_SEC)
            publish_raw(pack(header, sec, nanosec))
        return publish_clock

    msg = ClockMsg()

    def publish_clock_msg(time_ns: int) -> None:
        msg.clock.sec, msg.clock.nanosec = divmod(time_ns + offset_ns, NS_PER_SEC)
        publisher.publish(msg)
    return publish_clock_msg


def publisher_destroyed(*args) -> None:
    """Stand in for a publish function whose publisher is destroyed: raise RuntimeError."""
    raise RuntimeError('the node is destroyed; its publishers are gone')


class ClockServer(Node):
    """Publish /clock from a :class:`Timeline` and serve its control services."""

    #: The profile of every service of this node (see the module constant).
    SERVICE_QOS = SERVICE_QOS

    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        # `-p real_time_factor:=2` arrives as an integer; a double parameter takes it as 2.0.
        # (The pre-set callback does this for run-time changes; declaration bypasses it.)
        overrides = getattr(self, '_parameter_overrides', {})
        for name in _DOUBLE_PARAMETERS:
            if name in overrides and overrides[name].type_ == Parameter.Type.INTEGER:
                overrides[name] = Parameter(
                    name, Parameter.Type.DOUBLE, float(overrides[name].value))
        # The server is the source of /clock and must not subscribe to it: an events executor
        # queues one event per sample, so its own time source would queue one per frame it
        # publishes. With use_sim_time its ROS clock follows the frames it publishes instead
        # (the time source, detached from the node, still switches the clock's mode).
        self._own_time_source = getattr(self, '_time_source', None)
        if self._own_time_source is not None:
            self._own_time_source.detach_node()
        self._own_time_msg = ClockMsg()
        self.declare_parameters('', [
            (name, DEFAULTS[name], DESCRIPTORS[name]) for name in DEFAULTS])
        values = {name: self.get_parameter(name).value for name in DEFAULTS}
        mode = parse_mode(values['mode'])
        self._timeline = Timeline(
            time.monotonic_ns,
            mode=mode,
            sync=bool(values['sync']),
            paused=bool(values['paused']),
            time_step_ns=time_step_from_seconds(values['time_step']),
            real_time_factor=real_time_factor_from_float(values['real_time_factor']),
            owner_timeout_ns=owner_timeout_from_seconds(values['owner_timeout']),
        )
        self._publish_period_ns = self._publish_period(values['publish_rate'])

        self.add_pre_set_parameters_callback(self._complete_parameters)
        self.add_on_set_parameters_callback(self._validate_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)

        self._clock_pub = self.create_publisher(ClockMsg, CLOCK_TOPIC, CLOCK_QOS)
        self._publish_clock = clock_publisher(self._clock_pub)
        self._last_publish_ns = 0

        # Everything runs in the node's default (mutually exclusive) callback group on a
        # single-threaded executor: the timeline is only ever touched by one callback at a
        # time, so it needs no lock, and a step's frames can never interleave with a tick's.
        services = [
            (SyncModeCmd, '~/sync_mode_cmd', self._on_sync_mode_cmd),
            (Step, '~/step', self._on_step),
            (GetStatus, '~/get_status', self._on_get_status),
            (Trigger, '~/step_once', self._on_step_once),
            (Trigger, '~/pause', self._trigger(self._pause, True)),
            (Trigger, '~/resume', self._trigger(self._pause, False)),
            (Trigger, '~/reset', self._trigger(self._reset)),
            (SetBool, '~/set_sync', self._on_set_sync),
        ]
        for srv_type, name, callback in services:
            self.create_service(srv_type, name, callback, qos_profile=SERVICE_QOS)

        # Wall timers only: a ROS-time timer would wait on the clock this node publishes.
        self._steady_clock = Clock(clock_type=ClockType.STEADY_TIME)
        self._tick_timer = None
        self._tick_period_ns = None
        self._full_speed = False
        self._driven = False
        self._retime()
        self._publish(self._timeline.time_ns)
        self._diagnostics = ClockDiagnostics(self, self._timeline, self._steady_clock)
        if simulation_interfaces.AVAILABLE:
            self._simulation_interfaces = simulation_interfaces.SimulationInterfaces(self)
        status = self._timeline.status()
        self.get_logger().info(
            f'publishing {CLOCK_TOPIC}: mode={status.mode.value} sync={status.sync} '
            f'time_step={status.time_step_ns} ns real_time_factor='
            f'{float(status.real_time_factor)} paused={status.paused}')

    # -- /clock --------------------------------------------------------------------------------

    def destroy_node(self) -> None:
        """Destroy the node; from now on a publish raises instead of using a freed publisher."""
        self._publish_clock = publisher_destroyed
        super().destroy_node()

    def _publish(self, time_ns: int) -> None:
        self._publish_clock(time_ns)
        self._follow_own_time(time_ns)

    def _follow_own_time(self, time_ns: int) -> None:
        """With use_sim_time, set this node's ROS clock to the time just published."""
        time_source = self._own_time_source
        if time_source is not None and time_source.ros_time_is_active:
            stamp = self._own_time_msg.clock
            stamp.sec, stamp.nanosec = divmod(time_ns, NS_PER_SEC)
            time_source.clock_callback(self._own_time_msg)

    def _publish_frames(self, frames: range) -> None:
        # The hot path of free run and steps: nothing in the loop but the publish.
        publish_clock = self._publish_clock
        for time_ns in frames:
            publish_clock(time_ns)
        if frames:
            self._published(frames[-1])

    def _published(self, time_ns: int) -> None:
        """Note that frames up to ``time_ns`` are out: the idle republish waits from here."""
        self._last_publish_ns = time.monotonic_ns()
        self._follow_own_time(time_ns)

    def _on_tick(self) -> None:
        timeline = self._timeline
        self._release_lapsed_owner()
        if self._full_speed:
            frames = self._full_speed_batch()
        else:
            frames = timeline.poll(FRAMES_PER_TICK)
        if frames:
            self._publish_frames(frames)
            if frames[-1] >= MAX_TIME_NS - timeline.time_step_ns:
                self.get_logger().error(
                    'simulated time reached the latest representable value; reset to go on',
                    throttle_duration_sec=10.0)
            return
        now = time.monotonic_ns()
        if now - self._last_publish_ns >= self._publish_period_ns:
            # Not a new frame: the current time again, for nodes that start late.
            self._publish(timeline.time_ns)
            self._last_publish_ns = now

    def _full_speed_batch(self) -> range:
        """
        Free run as fast as possible: publish frames for FULL_SPEED_BATCH_NS; return the last.

        Short batches keep the services answering between them.
        """
        deadline = time.monotonic_ns() + FULL_SPEED_BATCH_NS
        poll = self._timeline.poll
        frames = poll(FULL_SPEED_CHUNK)
        while frames and time.monotonic_ns() < deadline:
            self._publish_frames(frames)
            frames = poll(FULL_SPEED_CHUNK)
        return frames

    @property
    def full_speed(self) -> bool:
        """Whether time free-runs as fast as possible (real_time_factor 0)."""
        return self._full_speed

    def drive_full_speed(self) -> None:
        """
        Leave full-speed free run to the caller's loop.

        The loop calls :meth:`advance` between events, as :func:`spin_until_stopped` does.
        Without it a 1 ms timer runs batches, which leaves most of every millisecond idle: a
        timer of period 0 would starve the services (seconds of latency on an events
        executor).
        """
        self._driven = True
        self._retime()

    def advance(self) -> None:
        """Publish what is due now, as one tick of the timer does."""
        self._on_tick()

    def _retime(self) -> None:
        """Make the tick timer's period fit the current state."""
        period = self._timeline.frame_period_ns()
        self._full_speed = period == 0
        if period is None:
            tick_ns = self._publish_period_ns
        elif period == 0:
            tick_ns = self._publish_period_ns if self._driven else FULL_SPEED_TICK_NS
        else:
            tick_ns = int(min(max(period, MIN_TICK_NS), self._publish_period_ns))
        if tick_ns == self._tick_period_ns:
            return
        if self._tick_timer is not None:
            self.destroy_timer(self._tick_timer)
        self._tick_period_ns = tick_ns
        self._tick_timer = self.create_timer(
            tick_ns / NS_PER_SEC, self._on_tick, clock=self._steady_clock)

    @staticmethod
    def _publish_period(rate_hz: float) -> int:
        return round(NS_PER_SEC / rate_hz)

    # -- parameters ----------------------------------------------------------------------------

    def _complete_parameters(self, parameters: List[Parameter]) -> List[Parameter]:
        """Pre-set: accept integers for double parameters, keep mode and sync consistent."""
        completed = [
            Parameter(p.name, Parameter.Type.DOUBLE, float(p.value))
            if p.name in _DOUBLE_PARAMETERS and p.type_ == Parameter.Type.INTEGER else p
            for p in parameters]
        values = {p.name: p.value for p in completed}
        if 'sync' not in values and values.get('mode') == Mode.REAL_TIME.value:
            # Real-time mode has no sync: leaving simulation turns it off.
            completed.append(Parameter('sync', Parameter.Type.BOOL, False))
        if ('mode' not in values and values.get('sync') is True
                and self._timeline.status().mode is Mode.REAL_TIME):
            # Sync on from real-time mode switches to simulation, as sync_mode_cmd does.
            completed.append(Parameter('mode', Parameter.Type.STRING, Mode.SIMULATION.value))
        return completed

    def _validate_parameters(self, parameters: List[Parameter]) -> SetParametersResult:
        """On-set: check every value we own; a refusal names what is allowed."""
        try:
            self._parse_parameters(parameters)
        except Refused as refused:
            return SetParametersResult(successful=False, reason=refused.reason)
        return SetParametersResult(successful=True)

    def _parse_parameters(self, parameters: List[Parameter]) -> dict:
        parsed = {}
        for parameter in parameters:
            name, value = parameter.name, parameter.value
            if name == 'mode':
                parsed[name] = parse_mode(value)
            elif name == 'time_step':
                parsed[name] = time_step_from_seconds(value)
            elif name == 'real_time_factor':
                parsed[name] = real_time_factor_from_float(value)
            elif name == 'owner_timeout':
                parsed[name] = owner_timeout_from_seconds(value)
            elif name == 'publish_rate':
                if not MIN_PUBLISH_RATE <= value <= MAX_PUBLISH_RATE:
                    raise Refused(
                        f'publish_rate must be between {MIN_PUBLISH_RATE} and '
                        f'{MAX_PUBLISH_RATE} Hz, got {value!r}')
                parsed[name] = self._publish_period(value)
            elif name in ('sync', 'paused'):
                parsed[name] = value
        status = self._timeline.status()
        if parsed.get('mode', status.mode) is Mode.REAL_TIME and parsed.get('sync', False):
            raise Refused(
                "sync applies to mode 'simulation' only; sync true with mode real_time is "
                'not a valid combination')
        return parsed

    def _apply_parameters(self, parameters: List[Parameter]) -> None:
        """Post-set: apply what was validated; a mode or sync change is one announced reset."""
        parsed = self._parse_parameters(parameters)
        timeline = self._timeline
        epoch = timeline.epoch
        if 'mode' in parsed or 'sync' in parsed:
            status = timeline.status()
            mode = parsed.get('mode', status.mode)
            timeline.set_mode_sync(mode, parsed.get('sync', status.sync))
        if 'time_step' in parsed:
            timeline.set_time_step_ns(parsed['time_step'])
        if 'real_time_factor' in parsed:
            timeline.set_real_time_factor(parsed['real_time_factor'])
        if 'owner_timeout' in parsed:
            timeline.set_owner_timeout_ns(parsed['owner_timeout'])
        if 'paused' in parsed:
            timeline.set_paused(parsed['paused'])
        if 'publish_rate' in parsed:
            self._publish_period_ns = parsed['publish_rate']
        self._after_change(epoch)

    def _after_change(self, epoch_before: int) -> None:
        """Announce a reset, publish the new time at once and fit the timer to the state."""
        timeline = self._timeline
        if timeline.epoch != epoch_before:
            self.get_logger().info(
                f'time reset to 0 (epoch {timeline.epoch}): {timeline.last_reset_reason}')
            self._publish(timeline.time_ns)
            self._last_publish_ns = time.monotonic_ns()
        self._retime()

    def _mirror_parameters(self) -> None:
        """Make the parameters show a state that a service call changed."""
        status = self._timeline.status()
        wanted = {
            'mode': status.mode.value,
            'sync': status.sync,
            'paused': status.paused,
        }
        current_step = time_step_from_seconds(self.get_parameter('time_step').value)
        if current_step != status.time_step_ns:
            wanted['time_step'] = status.time_step_ns / NS_PER_SEC
        changed = [Parameter(name, value=value) for name, value in wanted.items()
                   if self.get_parameter(name).value != value]
        if changed:
            self.set_parameters_atomically(changed)

    # -- services ------------------------------------------------------------------------------

    def _on_sync_mode_cmd(self, request, response):
        timeline = self._timeline
        epoch = timeline.epoch
        self._release_lapsed_owner()
        try:
            user_id, message = timeline.sync_mode_cmd(
                request.user_id, request.start_sync_mode, request.time_step)
        except Refused as refused:
            response.result = False
            response.user_id = refused.holder
            response.message = refused.reason
            self.get_logger().warning(f'sync_mode_cmd refused: {refused.reason}')
        else:
            response.result = True
            response.user_id = user_id
            response.message = message
            self.get_logger().info(f'sync_mode_cmd from {user_id!r}: {message}')
            self._after_change(epoch)
            self._mirror_parameters()
        status = timeline.status()
        response.frame = status.frame
        response.time_step = status.time_step_ns // NS_PER_MS
        return response

    def _on_step(self, request, response):
        response.success, response.message = self.step_frames(request.user_id, request.steps)
        response.frame = self._timeline.frame
        response.clock.sec, response.clock.nanosec = divmod(self._timeline.time_ns, NS_PER_SEC)
        response.epoch = self._timeline.epoch
        return response

    def _on_step_once(self, request, response):
        response.success, response.message = self.step_frames(ANONYMOUS_USER, 1)
        return response

    def step_frames(self, user_id: str, steps: int) -> tuple:
        """Step for ``user_id``; publish every frame; return (success, message)."""
        self._release_lapsed_owner()
        try:
            frames = self._timeline.step(user_id, steps)
        except Refused as refused:
            self.get_logger().warning(
                f'step refused: {refused.reason}', throttle_duration_sec=1.0)
            return False, refused.reason
        # Every frame is on the wire before the response is sent.
        self._publish_frames(frames)
        return True, f'frame {self._timeline.frame}, time {self._timeline.time_ns} ns'

    def _on_get_status(self, request, response):
        status = self._timeline.status()
        response.mode = status.mode.value
        response.sync = status.sync
        response.paused = status.paused
        response.frame = status.frame
        response.clock.sec, response.clock.nanosec = divmod(status.time_ns, NS_PER_SEC)
        response.epoch = status.epoch
        response.owner = status.owner
        response.real_time_factor = float(status.real_time_factor)
        response.time_step_ns = status.time_step_ns
        response.publish_rate = NS_PER_SEC / self._publish_period_ns
        return response

    def _on_set_sync(self, request, response):
        holder = self._timeline.owner
        changed = self.apply_change(
            lambda: self._timeline.set_sync(request.data, switch_mode=True))
        response.success = True
        state = 'on' if request.data else 'off'
        response.message = f'sync {state}' if changed else f'sync was already {state}'
        if holder and not request.data:
            response.message += f'; hold of {holder!r} released'
            self.get_logger().info(f'sync turned off by an operator; {holder!r} released')
        return response

    def _trigger(self, action: Callable, *args) -> Callable:
        def callback(request, response):
            response.message = self.apply_change(lambda: action(*args))
            response.success = True
            return response
        return callback

    @property
    def timeline(self) -> Timeline:
        """Return the timeline this node publishes."""
        return self._timeline

    def apply_change(self, change: Callable):
        """Run ``change()`` on the timeline, then announce, publish and mirror its effects."""
        epoch = self._timeline.epoch
        try:
            return change()
        finally:
            self._after_change(epoch)
            self._mirror_parameters()

    def _pause(self, paused: bool) -> str:
        changed = self._timeline.set_paused(paused)
        word = 'paused' if paused else 'resumed'
        if not changed:
            return 'already paused' if paused else 'not paused'
        self.get_logger().info(f'time {word} at {self._timeline.time_ns} ns')
        return f'{word} at {self._timeline.time_ns} ns'

    def _reset(self) -> str:
        self._timeline.reset('~/reset called')
        return f'time reset to 0 (epoch {self._timeline.epoch})'

    def _release_lapsed_owner(self) -> None:
        lapsed = self._timeline.release_lapsed_owner()
        if lapsed:
            self.get_logger().warning(
                f'sync hold of {lapsed!r} lapsed after owner_timeout without a call; '
                'sync stays on with no holder')


#: The variable by which Fast DDS (2.13 and later) takes its transports, and our choice.
TRANSPORTS_VARIABLE = 'FASTDDS_BUILTIN_TRANSPORTS'
SAFE_TRANSPORTS = 'UDPv4'


def avoid_shared_memory(environ=os.environ) -> Optional[str]:
    """
    Make this process's Fast DDS participant use UDPv4 only where it can; return a log line.

    Call before ``rclpy.init``. Fast DDS 2.14 (Jazzy) can freeze a writer for good when a
    subscriber on the same host dies while taking a sample over shared memory: the writer's
    next send to that process regenerates its port and waits forever on a lock in the shared
    segment (eProsima/Fast-DDS#6485, fix proposed in #6497). Seen here: a clock server stuck
    in the middle of a step, deaf to SIGINT, after a client that received /clock was SIGKILLed
    (a gdb backtrace of the main thread ends in ``SharedMemManager::Port::regenerate_port``).
    Over UDP a dead reader costs unanswered sends only.

    Nothing is changed when ``FASTDDS_BUILTIN_TRANSPORTS`` is set already (``DEFAULT`` puts
    shared memory back), for another middleware, or with
    ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``: there rmw_fastrtps installs shared memory
    and UDP itself, whatever the variable says. Return None when Fast DDS is not in use.
    """
    if not environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp').startswith('rmw_fastrtps'):
        return None
    if TRANSPORTS_VARIABLE in environ:
        return f'Fast DDS transports as set: {TRANSPORTS_VARIABLE}={environ[TRANSPORTS_VARIABLE]}'
    if (environ.get('ROS_AUTOMATIC_DISCOVERY_RANGE') == 'LOCALHOST'
            or environ.get('ROS_LOCALHOST_ONLY') == '1'):
        return ('Fast DDS shared memory on (rmw_fastrtps adds it for a LOCALHOST discovery '
                'range): a subscriber killed while taking a sample can freeze this process '
                '(eProsima/Fast-DDS#6485)')
    environ[TRANSPORTS_VARIABLE] = SAFE_TRANSPORTS
    return (f'Fast DDS over {SAFE_TRANSPORTS} only ({TRANSPORTS_VARIABLE}={SAFE_TRANSPORTS}): '
            'a subscriber that dies cannot freeze this process through shared memory '
            '(eProsima/Fast-DDS#6485); set the variable (DEFAULT) to choose otherwise')


def make_executor():
    """
    Return rclpy's EventsExecutor where it exists, else a SingleThreadedExecutor.

    On the events executor a one-frame step is answered in less than half the time, and
    publishing at 1 kHz takes a third of the CPU (README, Performance). It is experimental in
    Jazzy; the whole test suite passes on it with the Jazzy (rclpy 7.1.6) and Kilted (rclpy
    9.1.2) wheels.
    """
    if EventsExecutor is not None:
        return EventsExecutor()
    return SingleThreadedExecutor()


def spin_until_stopped(make_node: Callable[[], Node], args=None) -> int:
    """
    Init rclpy, make the node and spin it until Ctrl-C or SIGTERM; return the exit code.

    An invalid configuration (a refused parameter) ends it at once with a FATAL line and 1.
    """
    # rclpy's SIGINT handler (installed by init, chained to this one) shuts the context down,
    # which ends spin(). This handler only takes note: Python's default one would raise
    # KeyboardInterrupt wherever the interpreter happens to be, even in a __del__ during
    # garbage collection, where it cannot be caught and prints a traceback.
    interrupted = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: interrupted.append(signum))
    node = None
    transports = avoid_shared_memory()
    try:
        rclpy.init(args=args)
        if interrupted:
            return 0
        try:
            node = make_node()
        except (Refused, ParameterException) as error:
            rclpy.logging.get_logger(NODE_NAME).fatal(f'invalid configuration: {error}')
            return 1
        if transports is not None:
            node.get_logger().info(transports)
        executor = make_executor()
        executor.add_node(node)
        node.drive_full_speed()
        # One event at a time, not spin(): EventsExecutor.spin() of rclpy 7.1.6 busy-loops
        # on a core and never serves a request from another process; spin_once() works.
        # At full speed, one batch of frames between two events.
        while rclpy.ok():
            if node.full_speed:
                executor.spin_once(timeout_sec=0)
                node.advance()
            else:
                executor.spin_once(timeout_sec=1.0)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except RuntimeError:
        # SIGINT or SIGTERM shut the context down while a callback was publishing.
        if rclpy.ok():
            raise
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
        signal.signal(signal.SIGINT, previous)
    return 0


def main(args=None) -> int:
    """Run the clock server until Ctrl-C or SIGTERM; return the exit code."""
    return spin_until_stopped(ClockServer, args)
