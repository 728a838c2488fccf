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
The clock server node: publishes ``/clock`` from a :class:`Timeline` and serves its control.

Thin by design: parameters (:mod:`.parameters`) and services (:mod:`.services`) become calls
on the public methods here, which call the time core; frames go to a :class:`FrameSink`.
Timers are steady (wall) timers only, so the server works with ``use_sim_time`` true or false
and never waits on its own clock.
"""

import time
from typing import Callable
from typing import Optional

from rclpy.clock import Clock
from rclpy.clock import ClockType
from rclpy.node import Node
from rosgraph_msgs.msg import Clock as ClockMsg
from sim_clock.core import settings
from sim_clock.core.pacing import FRAMES_PER_TICK
from sim_clock.core.pacing import FULL_SPEED_BATCH_NS
from sim_clock.core.pacing import FULL_SPEED_CHUNK
from sim_clock.core.rules import participants_hold
from sim_clock.core.rules import Refused
from sim_clock.core.state import Change
from sim_clock.core.timeline import Timeline
from sim_clock.core.units import MAX_TIME_NS
from sim_clock.core.units import NS_PER_MS
from sim_clock.core.units import NS_PER_SEC
from sim_clock.core.units import split_ns
from sim_clock.names import CLOCK_QOS
from sim_clock.names import CLOCK_TOPIC
from sim_clock.names import NODE_NAME
from sim_clock.node import parameters
from sim_clock.node import runtime
from sim_clock.node import simulation_interfaces
from sim_clock.node.acks import Acknowledgements
from sim_clock.node.alarm import ClockSourceAlarm
from sim_clock.node.diagnostics import ClockDiagnostics
from sim_clock.node.outcomes import Answer
from sim_clock.node.outcomes import ServerStatus
from sim_clock.node.outcomes import StepOutcome
from sim_clock.node.outcomes import SyncOutcome
from sim_clock.node.outcomes import time_msg
from sim_clock.node.participants import Participants
from sim_clock.node.publishing import ClockSink
from sim_clock.node.publishing import FrameSink
from sim_clock.node.rate_cap import CappedSink
from sim_clock.node.resets import log_change
from sim_clock.node.resets import ResetEvents
from sim_clock.node.runtime import detach_time_source
from sim_clock.node.runtime import spin_until_stopped
from sim_clock.node.services import ControlServices
from sim_clock.node.views import ClockViews


class ClockServer(Node):
    """
    Publish /clock from a :class:`Timeline` and serve its control.

    :param sink: makes the :class:`FrameSink` from this node (default: /clock only).
    :param clock_offset_ns: /clock is the timeline's time plus this (a bag's first stamp).
    """

    def __init__(self, *, sink: Optional[Callable[['ClockServer'], FrameSink]] = None,
                 clock_offset_ns: int = 0, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        self.clock_offset_ns = clock_offset_ns
        # With use_sim_time this node's ROS clock follows the frames it publishes.
        self._own_time_source = detach_time_source(self)
        self._own_time_msg = ClockMsg()
        values = parameters.declare(self)
        self._core = settings.initial(values, now_ns=time.monotonic_ns)
        self._timeline, self._pacing = self._core.timeline, self._core.pacing
        self._parameter_bridge = parameters.ParameterBridge(
            self, lambda: self._timeline.status().mode, self._apply_settings)
        self._listeners = []
        self._reset_events = ResetEvents(self)
        #: The /clock publisher; the sink publishes on it.
        self.clock_publisher = self.create_publisher(ClockMsg, CLOCK_TOPIC, CLOCK_QOS)
        make_sink = sink or (lambda node: ClockSink(node, clock_offset_ns))
        self.views = ClockViews(self)
        # Free run under max_clock_rate: the views follow the frames that go out on /clock.
        self.sink = CappedSink(self.views.wrap(make_sink(self)), self, self._core.rate_cap)
        #: The clock of every timer of this node: steady, never ROS time.
        self.steady_clock = Clock(clock_type=ClockType.STEADY_TIME)
        # One single-threaded executor runs every callback: the timeline needs no lock.
        self._control = ControlServices(self)
        self.participants = Participants(self, self._core.barrier)
        self._acks = Acknowledgements(self)
        self._waiting_steps = False
        self._wants_waiting_steps = self._core.ack_timeout_ns > 0
        self._tick_timer = self._tick_period_ns = None
        self._full_speed = self._driven = False
        self._retime()
        self._republish()
        self.alarm = ClockSourceAlarm(self, self.steady_clock, self.views.topics)
        self._diagnostics = ClockDiagnostics(
            self, self._timeline, self._core.barrier, self.steady_clock, self.alarm)
        if simulation_interfaces.AVAILABLE:
            self._simulation_interfaces = simulation_interfaces.SimulationInterfaces(self)
        status = self._timeline.status()
        self.get_logger().info(
            f'publishing {CLOCK_TOPIC}: mode={status.mode.value} sync={status.sync} '
            f'time_step={status.time_step_ns} ns real_time_factor='
            f'{float(status.real_time_factor)} paused={status.paused}')

    @property
    def timeline(self) -> Timeline:
        """Return the timeline this node publishes."""
        return self._timeline

    def clock_ns(self, time_ns: int) -> int:
        """Return the /clock value of a timeline time."""
        return self.clock_offset_ns + time_ns

    def add_change_listener(self, listener: Callable[[Change], None]) -> None:
        """Call ``listener`` with every change of the timeline, after the server's own."""
        self._listeners.append(listener)

    def destroy_node(self) -> None:
        """Destroy the node; from now on a publish raises instead of using a freed publisher."""
        self.sink.close()
        super().destroy_node()

    # -- the public methods that services call -------------------------------------------------

    def step(self, user_id: str, steps: int, target_frame: int = 0, epoch=None) -> StepOutcome:
        """Advance ``steps`` frames, or to ``target_frame`` (if no reset since ``epoch``)."""
        if self._steps_wait():
            return self._step_outcome(False, 'steps wait (for participants or acknowledgements):'
                                             ' only ~/step and ~/step_once can')
        try:
            frames = self.apply_change(
                lambda: self._timeline.step(user_id, steps, target_frame, epoch))
        except Refused as refused:
            self.get_logger().warning(
                f'step refused: {refused.reason}', throttle_duration_sec=1.0)
            return self._step_outcome(False, refused.reason)
        # Every frame is on the wire before the answer.
        self._emit(frames)
        timeline = self._timeline
        return self._step_outcome(True, f'frame {timeline.frame}, time {self.clock_now()} ns')

    async def step_async(self, user_id: str, steps: int, target_frame: int = 0,
                         epoch=None) -> StepOutcome:
        """
        :meth:`step`, waiting for the participants each frame is due for before the next.

        A participant late beyond participant_timeout stops the step at the frame reached
        (success false, the late ones named); the next step waits for it first.
        """
        if not self._steps_wait():
            return self.step(user_id, steps, target_frame, epoch)
        timeline, barrier = self._timeline, self._core.barrier
        try:
            steps = remaining = self.apply_change(
                lambda: timeline.check_step(user_id, steps, target_frame, epoch))
        except Refused as refused:
            return self._step_outcome(False, refused.reason)
        barrier.count_again(time.monotonic_ns())
        while True:
            late = await self.participants.wait()
            if late:
                return self._step_outcome(
                    False, f'frame {timeline.frame} waits for late participants: '
                    f'{", ".join(late)}; {steps - remaining} of {steps} frames done',
                    late=late)
            if not remaining:
                return await self._acknowledged(self._step_outcome(
                    True, f'frame {timeline.frame}, time {self.clock_now()} ns'))
            count = (barrier.frames_until_due(self.clock_now(), timeline.time_step_ns, remaining)
                     if self.barrier_applies() else remaining)
            try:
                frames = self.apply_change(lambda: timeline.step(user_id, count))
            except Refused as refused:
                return self._step_outcome(
                    False, f'stopped after {steps - remaining} of {steps} frames: '
                    f'{refused.reason}')
            self._emit(frames)
            remaining -= count

    async def _acknowledged(self, outcome: StepOutcome) -> StepOutcome:
        """Wait for the step's frames to be acknowledged (ack_timeout); name what was not."""
        if self._core.ack_timeout_ns:
            outcome.unacknowledged = await self._acks.wait(
                self.sink.publishers(), self._core.ack_timeout_ns)
            if outcome.unacknowledged:
                outcome.message += ('; not acknowledged by all reliable readers in time: '
                                    + ', '.join(outcome.unacknowledged))
        return outcome

    def sync_mode_cmd(self, user_id: str, start: bool, time_step_ms: int) -> SyncOutcome:
        """Take or give up sync mode, MORAI's way."""
        try:
            user_id, message = self.apply_change(
                lambda: self._timeline.sync_mode_cmd(user_id, start, time_step_ms))
            result = True
            self.get_logger().info(f'sync_mode_cmd from {user_id!r}: {message}')
        except Refused as refused:
            result, user_id, message = False, refused.holder, refused.reason
            self.get_logger().warning(f'sync_mode_cmd refused: {message}')
        status = self._timeline.status()
        return SyncOutcome(result, user_id, message, status.frame,
                           status.time_step_ns // NS_PER_MS)

    def set_sync(self, on: bool) -> Answer:
        """Sync on with no holder, or off releasing any holder (the operator's override)."""
        holder = self._timeline.holder
        changed = self.apply_change(lambda: self._timeline.set_sync(on, switch_mode=True))
        state = 'on' if on else 'off'
        message = f'sync {state}' if changed else f'sync was already {state}'
        if holder and not on:
            message += f'; hold of {holder!r} released'
            self.get_logger().info(f'sync turned off by an operator; {holder!r} released')
        return Answer(True, message)

    def pause(self) -> Answer:
        """Freeze real-time and free-run time."""
        changed = self.apply_change(lambda: self._timeline.set_paused(True))
        return Answer(True, f'paused at {self.clock_now()} ns' if changed else 'already paused')

    def resume(self) -> Answer:
        """Unfreeze time."""
        changed = self.apply_change(lambda: self._timeline.set_paused(False))
        return Answer(True, f'resumed at {self.clock_now()} ns' if changed else 'not paused')

    def reset(self) -> Answer:
        """Time and frame back to the start, epoch + 1; mode, sync and holder stay."""
        self.apply_change(lambda: self._timeline.reset('~/reset called'))
        return Answer(True, f'time reset to {self.clock_now()} ns '
                            f'(epoch {self._timeline.epoch})')

    def status(self) -> ServerStatus:
        """Return the state as ``~/get_status`` answers it."""
        s = self._timeline.status()
        barrier = self._core.barrier
        joined = sorted(barrier.participants.values(), key=lambda p: p.name)
        done = [time_msg(participant.last_done_ns or 0) for participant in joined]
        return ServerStatus(
            s.mode.value, s.sync, s.paused, s.frame, self.clock_ns(s.time_ns), s.epoch, s.holder,
            float(s.real_time_factor), s.time_step_ns, NS_PER_SEC / self._pacing.publish_period_ns,
            [p.name for p in joined], done, [p.slowest_ns / NS_PER_SEC for p in joined],
            barrier.waiting_for, self.alarm.others, self.views.describe(),
            float(self._core.rate_cap.max_rate), self._core.rate_cap.stride)

    def apply_change(self, change: Callable):
        """Run ``change()`` on the timeline; then announce, publish and mirror what changed."""
        try:
            return change()
        finally:
            self._dispatch()

    # -- changes -------------------------------------------------------------------------------

    def participants_changed(self) -> None:
        """Note that a participant joined or left: steps must be able to wait from now on."""
        self._wants_waiting_steps = True
        self._retime()

    def barrier_cleared(self) -> None:
        """Go on with free run at once: every participant finished the last frame."""
        if self._timeline.free_running:
            self.advance()

    def barrier_applies(self) -> bool:
        """Whether frames wait for participants now."""
        return self.participants.joined and participants_hold(self._timeline.mode)

    def _steps_wait(self) -> bool:
        """Whether a step waits (for participants or acknowledgements) after its frames."""
        return self.barrier_applies() or bool(self._core.ack_timeout_ns)

    def _apply_settings(self, parsed: dict) -> None:
        self.apply_change(lambda: settings.apply(parsed, self._core))
        if self._core.ack_timeout_ns:
            self._wants_waiting_steps = True

    def _dispatch(self) -> None:
        changes = self._timeline.take_changes()
        for change in changes:
            log_change(self.get_logger(), change, self.clock_ns(change.time_after_ns))
            for listener in self._listeners:
                listener(change)
        if any(change.reset for change in changes):
            self._republish()  # the new time at once
        self._retime()
        if changes:
            self._parameter_bridge.mirror(settings.mirrored(
                self._timeline, self.get_parameter('time_step').value))

    def _step_outcome(self, success: bool, message: str, late=()) -> StepOutcome:
        timeline = self._timeline
        return StepOutcome(success, message, timeline.frame, self.clock_now(), timeline.epoch,
                           list(late))

    def clock_now(self) -> int:
        """Return the /clock value of the current time."""
        return self.clock_ns(self._timeline.time_ns)

    # -- frames --------------------------------------------------------------------------------

    def _emit(self, frames: range) -> None:
        if frames:
            self.sink.publish_frames(frames)
            self._published()
            if self.barrier_applies():
                self.participants.published(self.clock_ns(frames[-1]))

    def _republish(self) -> None:
        """Publish the current time again (not a new frame), for nodes that start late."""
        self.sink.publish_time(self._timeline.time_ns)
        self._published()

    def _published(self) -> None:
        self._pacing.published(time.monotonic_ns())
        time_source = self._own_time_source
        if time_source is not None and time_source.ros_time_is_active:
            stamp = self._own_time_msg.clock
            stamp.sec, stamp.nanosec = split_ns(self.clock_now())
            time_source.clock_callback(self._own_time_msg)

    def _on_tick(self) -> None:
        timeline = self._timeline
        if timeline.release_lapsed_holder():
            self._dispatch()
        if self.barrier_applies():
            frames = self._barrier_frames()
        elif self._full_speed:
            frames = self._full_speed_batch()
        else:  # paced under max_clock_rate: held back while the cap cannot afford a frame
            frames = timeline.poll(self.sink.limit(FRAMES_PER_TICK))
        if frames:
            self._emit(frames)
            if frames[-1] >= MAX_TIME_NS - timeline.time_step_ns:
                self.get_logger().error(
                    'simulated time reached the latest representable value; reset to go on',
                    throttle_duration_sec=10.0)
        elif self._pacing.republish_due(time.monotonic_ns(), self._tick_period_ns):
            self._republish()

    def _barrier_frames(self) -> range:
        """Free run with participants: the frames due, up to the next one due for any of them."""
        barrier = self._core.barrier
        if not barrier.clear:
            late = barrier.late(time.monotonic_ns())
            if late:
                self.get_logger().warning(
                    f'free run waits for late participants: {", ".join(late)}',
                    throttle_duration_sec=5.0)
            return range(0)
        limit = barrier.frames_until_due(
            self.clock_now(), self._timeline.time_step_ns, FRAMES_PER_TICK)
        return self._timeline.poll(limit)

    def _full_speed_batch(self) -> range:
        """
        Free run as fast as possible: publish frames for FULL_SPEED_BATCH_NS; return the last.

        Short batches keep the services answering between them.
        """
        deadline = time.monotonic_ns() + FULL_SPEED_BATCH_NS
        poll = self._timeline.poll
        frames = poll(FULL_SPEED_CHUNK)
        while frames and time.monotonic_ns() < deadline:
            self._emit(frames)
            frames = poll(FULL_SPEED_CHUNK)
        return frames

    @property
    def full_speed(self) -> bool:
        """Whether time free-runs as fast as possible (real_time_factor 0)."""
        return self._full_speed

    def drive_full_speed(self) -> None:
        """Leave full-speed free run to the caller's loop, which calls :meth:`advance`."""
        self._driven = True
        self._retime()

    def advance(self) -> None:
        """Publish what is due now, as one tick of the timer does."""
        self._on_tick()

    def spin_once(self, executor):
        """
        One round of the spin loop: an event, and at full speed a batch of frames.

        Once a participant has joined, steps become coroutines that wait for it: on an
        executor that cannot await them without a busy loop, the node moves to one that can
        (returned; doc/design.md, "Executors").
        """
        if not self._driven:
            self.drive_full_speed()
        if self._wants_waiting_steps and not self._waiting_steps:
            if not runtime.awaits_coroutines(executor):
                executor = runtime.move_to_coroutine_executor(self, executor)
                self.get_logger().info(
                    'steps wait for participants or acknowledgements from now on '
                    f'({type(executor).__name__})')
            self._control.await_steps()
            self._waiting_steps = True
        if self._full_speed:
            executor.spin_once(timeout_sec=0)
            self.advance()
        else:
            executor.spin_once(timeout_sec=1.0)
        return executor

    def _retime(self) -> None:
        """Make the tick timer's period fit the current state."""
        period = self._timeline.frame_period_ns()
        self._core.rate_cap.pace(self._timeline.time_step_ns, self._timeline.real_time_factor)
        self._full_speed = period == 0
        tick_ns = self._pacing.tick_period_ns(period, self._driven)
        if tick_ns == self._tick_period_ns:
            return
        if self._tick_timer is not None:
            self.destroy_timer(self._tick_timer)
        self._tick_period_ns = tick_ns
        self._tick_timer = self.create_timer(
            tick_ns / NS_PER_SEC, self._on_tick, clock=self.steady_clock)


def main(args=None) -> int:
    """Run the clock server until Ctrl-C or SIGTERM; return the exit code."""
    return spin_until_stopped(ClockServer, args, logger_name=NODE_NAME)
