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

:class:`ClockServer` makes the server's parts and wires them: the time core, the frame engine
(:mod:`.engine`), :class:`ServerControl` (sync mode, pause, resume, reset, status), the
participants, gates, acknowledgements, flow control and views. It hands each part only the
parts it uses, never itself; the services (:mod:`.services`) and parameters
(:mod:`.parameters`) call those parts, and frames go to a :class:`FrameSink`. Timers are steady
(wall) timers only, so the server works with ``use_sim_time`` true or false and never waits on
its own clock.
"""

import argparse
import sys
import textwrap
import time
from typing import Callable
from typing import Optional

import rclpy
from rclpy.clock import Clock
from rclpy.clock import ClockType
from rclpy.node import Node
from sim_clock.compat import detach_time_source
from sim_clock.core import settings
from sim_clock.core.axes import Axes
from sim_clock.core.state import Change
from sim_clock.core.timeline import Timeline
from sim_clock.node import parameters
from sim_clock.node import resets
from sim_clock.node import simulation_interfaces
from sim_clock.node.acks import Acknowledgements
from sim_clock.node.alarm import ClockSourceAlarm
from sim_clock.node.changes import TimelineChanges
from sim_clock.node.control import ServerControl
from sim_clock.node.diagnostics import ClockDiagnostics
from sim_clock.node.engine import FrameEngine
from sim_clock.node.engine.parts import EngineParts
from sim_clock.node.engine.parts import FrameSink
from sim_clock.node.engine.parts import WaitParts
from sim_clock.node.flow_control import FlowControl
from sim_clock.node.frame_timeline import FrameTimeline
from sim_clock.node.gate_readers import OutputGates
from sim_clock.node.heartbeat import ClockHeartbeat
from sim_clock.node.heartbeat import heartbeat_setter
from sim_clock.node.participants import Participants
from sim_clock.node.publishing import ClockSink
from sim_clock.node.publishing import create_clock_publisher
from sim_clock.node.publishing import SinkParts
from sim_clock.node.readiness import ExpectedParticipants
from sim_clock.node.runtime import spin_until_stopped
from sim_clock.node.services import ControlServices
from sim_clock.node.throttled_logger import ThrottledLogger
from sim_clock.node.ticking import Ticker
from sim_clock.node.view_publishers import ClockViews
from sim_clock.node.view_publishers import declare_views
from sim_clock.process.arguments import check_ros_args
from sim_clock.process.arguments import InvalidRosArguments
from sim_clock.process.arguments import split_command_line
from sim_clock.wire.names import CLOCK_TOPIC
from sim_clock.wire.names import NODE_NAME


class ClockServer(Node):
    """
    Publish /clock from a :class:`Timeline` and serve its control.

    :param sink: makes the :class:`FrameSink` from the parts this node gives it
        (:class:`SinkParts`; default: /clock only).
    :param axes: where timeline time 0 lies on /clock and in a bag (default: both at 0).
    """

    def __init__(self, *, sink: Optional[Callable[[SinkParts], FrameSink]] = None,
                 axes: Axes = Axes(), **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        #: The time coordinates: every conversion between them goes through it.
        self.axes = axes
        #: True once the process is done with this node: its spin loop ends
        #: (:func:`~sim_clock.node.runtime.spin_until_stopped`). A bag player sets it at the
        #: end of its bag; the server itself never does.
        self.done = False
        values = parameters.declare(self)
        # Steady time in ns: every deadline, pace and wait of this node's parts counts by it.
        now_ns = time.monotonic_ns
        self._core = core = settings.initial(values, now_ns=now_ns)
        self._timeline, self._pacing = core.timeline, core.pacing
        #: The parts' logger: throttled warnings asked for at every tick cost nothing.
        logger = ThrottledLogger(self.get_logger(), now_ns)
        #: The clock of every timer of this node: steady, never ROS time.
        self.steady_clock = Clock(clock_type=ClockType.STEADY_TIME)
        #: What the server does with each frame, as it happens (~/get_frame_events).
        self.frame_timeline = FrameTimeline(self, core.frame_events, self._timeline,
                                            axes.to_clock, now_ns)
        self.frame_timeline.publish(core.publish_frame_events)
        #: The one place a change of the timeline is announced; the listeners below, in order.
        self.changes = TimelineChanges(
            self._timeline, axes, logger, self.frame_timeline.reset,
            lambda: core.take_changes(now_ns(), axes.to_clock))
        # From here on, mode, sync, paused and time_step read from the timeline; a set of
        # parameters changes the core through the change dispatch.
        self._parameter_bridge = bridge = parameters.ParameterBridge(self, core, self.changes)
        bridge.when_set('publish_frame_events', self.frame_timeline.publish)
        #: The tick timer; with use_sim_time this node's ROS clock follows the frames out.
        self.ticker = Ticker(
            self._timeline, self._pacing, core.rate_cap, axes,
            lambda period_s, callback: self.create_timer(period_s, callback,
                                                         clock=self.steady_clock),
            detach_time_source(self), now_ns)
        #: ``~/resets``: a message for each reset, to the nodes that follow them.
        self._reset_events = resets.ResetEvents(resets.create_publisher(self.create_publisher),
                                                axes.to_clock)
        self.changes.listen(self._reset_events.on_change)
        #: The one owner of this node's acknowledgement waits and stalled readers.
        self.acks = Acknowledgements(on_wait=self.frame_timeline.acknowledged)
        #: The /clock publisher; the sink publishes on it.
        self.clock_publisher = create_clock_publisher(self)
        #: The one owner of this node's flow control: every sink's writers take budgets of it.
        self.flow = FlowControl(self._timeline, self.acks, logger,
                                self.context.ok)
        # Armed while time advances only by steps: set again after each change, first.
        self.changes.after_dispatch(self.flow.after_changes)
        make_sink = sink or (lambda parts: ClockSink(
            parts.clock_publisher, parts.flow, parts.axes.clock_offset_ns))
        self.views = ClockViews(declare_views(self), self.create_publisher, self.flow,
                                self._timeline, axes)
        # Free run under max_clock_rate (the engine's cap): the views follow /clock.
        sink = self.views.wrap(make_sink(SinkParts(
            core, axes, logger, self.create_publisher, self.clock_publisher,
            self.flow, self.acks)))
        #: The nodes no frame goes out without (expected_participants) and their ~/ready.
        self.expected = expected = ExpectedParticipants(self, core.roster, sink.publishers,
                                                        self.steady_clock)
        bridge.when_set('expected_participants', lambda names: expected.look())
        # The readers of the waits on the wire; the engine, made next, tells them each frame
        # out and registers with them what a wait that ends calls.
        waits = WaitParts(self, self._timeline, axes, self.frame_timeline, self.expected,
                          steady_clock=self.steady_clock, now_ns=now_ns)
        self.participants = Participants(waits, core.barrier)
        #: The /clock writer's heartbeat period: slower while participants hold the frames.
        self.clock_heartbeat = heartbeat = ClockHeartbeat(
            heartbeat_setter(self.clock_publisher), lambda: len(core.barrier.participants),
            lambda: core.ack_timeout_ns)
        self.participants.when_joined_or_left(heartbeat.follow)
        bridge.when_set('ack_timeout', heartbeat.follow)
        #: The subscriptions of the gated topics (output_gates).
        self.output_gates = gates = OutputGates(waits, core.gates)
        bridge.when_set('output_gates', lambda specs: gates.reconfigure())
        # One executor runs every callback, on one thread: the timeline needs no lock.
        #: Every frame of every mode goes through it.
        self.engine = FrameEngine(EngineParts(
            core=core, axes=axes, sink=sink, acks=self.acks, events=self.frame_timeline,
            changes=self.changes, pace=self.ticker, participants=self.participants,
            gate_readers=self.output_gates, expected=self.expected, logger=logger,
            make_timer=lambda callback: self.create_timer(1.0, callback,
                                                          clock=self.steady_clock),
            now_ns=now_ns))
        self.changes.listen(self.engine.on_change)
        # After the engine's own (the time again after a reset): the tick, parameter events.
        self.changes.after_dispatch(self.ticker.after_changes)
        self.changes.after_dispatch(self._parameter_bridge.after_changes)
        self.alarm = alarm = ClockSourceAlarm(self, self.steady_clock, self.views.topics)
        #: The control calls (sync mode, pause, resume, reset, status) the services make.
        self.control = ServerControl(
            core, self.changes, axes, logger, self.views.describe,
            lambda: alarm.others, self.expected.describe_missing)
        self._control = ControlServices(self, self.control, self.engine.steps)
        self.ticker.start(self.engine.free_run.tick)
        self.output_gates.refresh()
        self.engine.frames.republish()
        self._diagnostics = ClockDiagnostics(
            self, self._timeline, core.hold, self.steady_clock, self.alarm)
        self._simulation_interfaces = (
            simulation_interfaces.SimulationInterfaces(self, self._timeline, self.changes,
                                                       self.engine.steps.step)
            if simulation_interfaces.AVAILABLE else None)
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
        """Return the /clock time of timeline time ``time_ns``."""
        return self.axes.to_clock(time_ns)

    def add_change_listener(self, listener: Callable[[Change], None]) -> None:
        """Call ``listener`` with every change of the timeline, after the server's own."""
        self.changes.listen(listener)

    def destroy_node(self) -> None:
        """
        Destroy the node; from now on a publish raises instead of using a freed publisher.

        Also for a node whose construction failed (a bad setting at start): Kilted's rclpy
        destroys it too when it shuts down, before it has an engine.
        """
        engine = getattr(self, 'engine', None)
        if engine is not None:
            engine.close()
            engine.frames.sink.close()
        interfaces = getattr(self, '_simulation_interfaces', None)
        if interfaces is not None:
            interfaces.close()
        super().destroy_node()

    def stop(self) -> None:
        """
        Note that the process stops (Ctrl-C, SIGTERM): a wait for acknowledgements ends now.

        Called from the signal handler (``runtime.spin_until_stopped``), which then ends the
        spin loop between two callbacks; the node is destroyed after that.
        """
        self.acks.stop()

    def set_parameters_atomically(self, parameter_list: list):
        """Set parameters as rclpy's Node does; each change, or its refusal, goes to the log."""
        bridge = getattr(self, '_parameter_bridge', None)  # none yet while parameters are declared
        if bridge is None:
            return super().set_parameters_atomically(parameter_list)
        return bridge.set_logged(parameter_list, super().set_parameters_atomically)

    def set_parameters(self, parameter_list: list) -> list:
        """Set parameters one by one, as rclpy's Node does (each through the log, as above)."""
        return [self.set_parameters_atomically([parameter]) for parameter in parameter_list]

    # -- the spin loop ---------------------------------------------------------------------------

    def spin_once(self, executor) -> None:
        """One round of the spin loop (``runtime.spin_until_stopped``): the ticker's."""
        self.ticker.spin_once(executor, self._core.holding)


def parse_arguments(argv: list) -> argparse.Namespace:
    """
    Parse the command line (without ROS arguments): nothing but ``--help``, which lists them.

    Anything else is a usage error (exit code 2) before any ROS entity exists.
    """
    lines = textwrap.wrap(
        'parameters (--ros-args -p NAME:=VALUE, or --ros-args --params-file FILE; each one '
        'settable at run time with ros2 param set):', 80)
    for setting in settings.SETTINGS:
        lines.append(f'  {setting.name} (default {setting.default!r})')
        lines.extend(textwrap.wrap(setting.description, 80, initial_indent='      ',
                                   subsequent_indent='      '))
    parser = argparse.ArgumentParser(
        prog='clock_server', formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            'Publish /clock and serve its control (~/step, ~/sync_mode_cmd, ~/get_status, '
            '...) as the node /sim_clock, e.g. with --ros-args -p sync:=true -p '
            'time_step:=0.001. No other arguments.', 80),
        epilog='\n'.join(lines))
    return parser.parse_args(argv)


def main(args=None) -> int:
    """Run the clock server until Ctrl-C or SIGTERM; return the exit code."""
    own_arguments, argv = split_command_line(sys.argv if args is None else args)
    parse_arguments(own_arguments[1:])  # --help and mistakes end here, with no node
    try:
        check_ros_args(argv)
    except InvalidRosArguments as error:
        rclpy.logging.get_logger(NODE_NAME).fatal(str(error))
        return 2
    return spin_until_stopped(ClockServer, argv, logger_name=NODE_NAME)
