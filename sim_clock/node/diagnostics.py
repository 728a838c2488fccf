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
The clock server's state on /diagnostics, about once a second, as diagnostic_updater shows it.

One DiagnosticStatus named ``<node name>: clock``: mode, sync, paused, frame, epoch, holder,
time, time step, the configured real-time factor and the one measured over the last period
(simulated over wall time, within one epoch), the participants and the output gates (each with
its last satisfied time and slowest wait). The level is WARN while free run falls more than
10% behind its configured pace (the host cannot keep up), participants are late or a gated
frame waits past its timeout, ERROR
while another node publishes on /clock (``node/alarm.py``), OK otherwise.
"""

import time

from diagnostic_msgs.msg import DiagnosticArray
from diagnostic_msgs.msg import DiagnosticStatus
from diagnostic_msgs.msg import KeyValue
from rclpy.clock import Clock
from rclpy.clock import ClockType
from sim_clock.core.hold import Hold
from sim_clock.core.hold import Late
from sim_clock.core.rules import Mode
from sim_clock.core.timeline import Timeline
from sim_clock.wire.names import DIAGNOSTICS_TOPIC

DIAGNOSTICS_PERIOD_S = 1.0
#: Free run slower than this fraction of its configured pace is reported as WARN.
PACE_WARN_FRACTION = 0.9


class ClockDiagnostics:
    """Publish a :class:`Timeline`'s state on /diagnostics from a steady timer of ``node``."""

    def __init__(self, node, timeline: Timeline, hold: Hold, steady_clock: Clock, alarm):
        self._node = node
        self._hold = hold
        self._alarm = alarm
        self._timeline = timeline
        self._wall_clock = Clock(clock_type=ClockType.SYSTEM_TIME)
        self._publisher = node.create_publisher(DiagnosticArray, DIAGNOSTICS_TOPIC, 10)
        self._last = None  # (steady ns, simulated ns, epoch) at the previous report
        self._timer = node.create_timer(DIAGNOSTICS_PERIOD_S, self.publish, clock=steady_clock)

    def measured_real_time_factor(self, now_ns: int, status) -> float:
        """Return simulated over wall time since the last report, or NaN across a reset."""
        last, self._last = self._last, (now_ns, status.time_ns, status.epoch)
        if last is None or last[2] != status.epoch or now_ns <= last[0]:
            return float('nan')
        return (status.time_ns - last[1]) / (now_ns - last[0])

    def publish(self) -> None:
        """Publish one report."""
        status = self._timeline.status()
        measured = self.measured_real_time_factor(time.monotonic_ns(), status)
        configured = float(status.real_time_factor)
        free_run = (status.mode is Mode.SIMULATION and not status.sync and not status.paused)
        level, message = DiagnosticStatus.OK, 'ok'
        if status.paused:
            message = 'paused'
        elif status.mode is Mode.SIMULATION and status.sync:
            message = f'sync mode, held by {status.holder}' if status.holder else 'sync mode'
        if free_run and configured > 0 and measured < PACE_WARN_FRACTION * configured:
            level = DiagnosticStatus.WARN
            message = f'free run behind its pace: {measured:.3f}x of {configured:g}x'
        values = {
            'mode': status.mode.value,
            'sync': str(status.sync).lower(),
            'paused': str(status.paused).lower(),
            'frame': str(status.frame),
            'epoch': str(status.epoch),
            'holder': status.holder,
            'time_ns': str(status.time_ns),
            'time_step_ns': str(status.time_step_ns),
            'real_time_factor': f'{configured:g}',
            'measured_real_time_factor': f'{measured:.4f}',
        }
        barrier, gates = self._hold.barrier, self._hold.gates
        late = self._hold.overdue(time.monotonic_ns())[0] or Late()
        if late.participants:
            level = DiagnosticStatus.WARN
            message = f'waiting for late participants: {", ".join(late.participants)}'
        values['participants'] = ', '.join(sorted(barrier.participants))
        values['waiting_for'] = ', '.join(barrier.waiting_for)
        for name in sorted(barrier.participants):
            participant = barrier.participants[name]
            values[f'participant {name}'] = (
                f'last done {participant.last_done_ns} ns, '
                f'slowest {participant.slowest_ns / 1e9:.6f} s')
        if late.topics:
            level = DiagnosticStatus.WARN
            message = ('a gated frame waits past its timeout for output on '
                       + ', '.join(late.topics))
        values['output_gates'] = ', '.join(spec.text for spec in gates.specs)
        values['output_gates_waiting'] = ', '.join(gates.waiting_for)
        for topic, gate in gates.gates.items():
            values[f'output gate {topic}'] = (
                f'last satisfied {gate.last_satisfied_ns} ns, '
                f'slowest {gate.slowest_ns / 1e9:.6f} s')
        values['other_clock_sources'] = ', '.join(self._alarm.others)
        if self._alarm.others:
            level = DiagnosticStatus.ERROR
            message = f'another clock source: {", ".join(self._alarm.others)}'
        report = DiagnosticStatus(
            level=level, name=f'{self._node.get_name()}: clock', message=message,
            hardware_id='sim_clock',
            values=[KeyValue(key=key, value=value) for key, value in values.items()])
        array = DiagnosticArray(status=[report])
        array.header.stamp = self._wall_clock.now().to_msg()
        self._publisher.publish(array)
