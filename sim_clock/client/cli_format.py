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
What the ``simclock`` command line prints: the status, progress, resets and steps as text.

Pure functions of what the client returns; the server's reasons are said with the simclock
commands that fix them instead of service names.
"""

import re

from sim_clock.core.units import format_seconds

#: Service names in the server's reasons -> the simclock command that does the same, in the
#: order they are replaced (longer phrases first).
COMMANDS_FOR_SERVICES = (
    ("set mode to 'simulation' first, or call ~/sync_mode_cmd or ~/set_sync, which switch to it",
     "run 'simclock mode simulation' first, or 'simclock sync on', which switches to it"),
    ('(~/sync_mode_cmd or ~/set_sync) or pause first',
     "('simclock sync on') or pause first ('simclock pause')"),
    ('an operator calls ~/set_sync false', "an operator runs 'simclock sync off'"),
    ('ask ~/get_status, then step again', "run 'simclock status', then step again"),
    ('~/set_sync false', "'simclock sync off'"),
    ('~/get_status', "'simclock status'"),
)


#: How a refusal names the holder of sync mode.
HELD_BY = re.compile(r"sync mode is held by '([^']*)'")


def for_the_command_line(reason: str, holder: str = '') -> str:
    """
    Return a server's reason with the simclock commands that fix it, not service names.

    ``holder``: who holds sync mode, where the answer says it apart (``sync_mode_cmd``); a
    step's refusal names it in its reason only.
    """
    for service, command in COMMANDS_FOR_SERVICES:
        reason = reason.replace(service, command)
    named = HELD_BY.search(reason)
    holder = holder or (named.group(1) if named else '')
    if holder and 'only that user_id may step' in reason:
        reason += (f" (step as it: 'simclock step --user-id {holder}'; or release it: "
                   "'simclock sync off')")
    return reason


def format_time(time_ns: int) -> str:
    """Format integer nanoseconds as seconds with every digit."""
    return format_seconds(time_ns) + ' s'


def format_status(status) -> str:
    """Return a human-readable status block."""
    if status.mode == 'real_time':
        mode = 'real_time'
    else:
        mode = 'simulation, sync ' + ('on' if status.sync else 'off')
    pace = 'as fast as possible' if status.real_time_factor == 0 else (
        f'{status.real_time_factor:g}x')
    return '\n'.join([
        f'mode:      {mode}' + (' (paused)' if status.paused else ''),
        f'time:      {format_time(status.time_ns)}',
        f'frame:     {status.frame}',
        f'epoch:     {status.epoch}',
        f'holder:    {status.owner or "(none)"}',
        f'time_step: {status.time_step_ns} ns',
        f'rate:      {pace}',
        f'publish:   {status.publish_rate:g} Hz' + _cap(status),
    ] + [f'view:      {view}' for view in status.clock_views]
      + [f'ALARM:     another clock source: {other}' for other in status.other_clock_sources]
      + format_participants(status) + format_gates(status) + format_expected(status))


def format_participants(status) -> list:
    """
    Return the status lines of the participants: who, what each finished, its slowest answer.

    Then what the current frame waits for: the participants named, or nothing.
    """
    if not status.participants:
        return ['participants: (none)']
    width = max(len(name) for name in status.participants)
    lines = [f'participants: {len(status.participants)}']
    for name, done_ns, slowest in zip(status.participants, status.participants_done_ns,
                                      status.participants_slowest):
        done = format_time(done_ns) if done_ns else '(no frame yet)'
        lines.append(f'  {name:<{width}}  done up to {done}, slowest answer {slowest:.3f} s')
    lines.append('waits for: ' + (', '.join(status.waiting_for) or
                                  'nothing (the current frame is finished)'))
    return lines


def format_gates(status) -> list:
    """Return the status lines of the output gates (none: no line): each, its last release."""
    if not status.output_gates:
        return []
    width = max(len(gate) for gate in status.output_gates)
    lines = [f'output gates: {len(status.output_gates)}']
    for gate, satisfied_ns, slowest in zip(status.output_gates, status.output_gates_satisfied_ns,
                                           status.output_gates_slowest):
        satisfied = format_time(satisfied_ns) if satisfied_ns else '(no frame yet)'
        lines.append(f'  {gate:<{width}}  released up to {satisfied}, slowest wait '
                     f'{slowest:.3f} s')
    lines.append('gates wait for: ' + (', '.join(status.output_gates_waiting) or 'nothing'))
    return lines


def format_expected(status) -> list:
    """
    Return the status lines of the expected participants (none: no line).

    Each node named in expected_participants; then what each one not ready lacks, or that
    every one is ready (frames go out).
    """
    if not status.expected_participants:
        return []
    lines = ['expected: ' + ', '.join(status.expected_participants)]
    if status.expected_missing:
        lines.append('not ready (no frame goes out until they are):')
        lines.extend(f'  {missing}' for missing in status.expected_missing)
    else:
        lines.append('not ready: nothing (every expected node is ready)')
    return lines


def _cap(status) -> str:
    """Say the free-run /clock cap, if one is set."""
    if not status.max_clock_rate:
        return ''
    every = 'every frame' if status.clock_stride == 1 else f'1 frame in {status.clock_stride}'
    return f' idle; free run at most {status.max_clock_rate:g} Hz ({every})'


def measured_rate(previous, current):
    """
    Return simulated over wall time between two ``(wall ns, simulated ns, epoch)`` readings.

    None when it cannot be told: no previous reading, a reset between them (another epoch), or
    no wall time between them. Two answers with the same time give 0, not a division by zero.
    """
    if previous is None or previous[2] != current[2] or current[0] <= previous[0]:
        return None
    return (current[1] - previous[1]) / (current[0] - previous[0])


def format_watch(status, rate) -> str:
    """Return the one line ``status --watch`` shows: frame, time, rate, holder, epoch."""
    if status.mode == 'real_time':
        mode = 'real_time'
    else:
        mode = 'sync on' if status.sync else 'free run'
    measured = '-' if rate is None else f'{rate:.3f}x'
    return (f'{mode}{" (paused)" if status.paused else ""}  frame {status.frame}  time '
            f'{format_time(status.time_ns)}  measured {measured}  holder '
            f'{status.owner or "(none)"}  epoch {status.epoch}')


def format_progress(progress) -> str:
    """Return a human-readable block of a bag player's progress."""
    if progress.time_left == 0:
        left = '0 s (at or past the end)'
    elif progress.time_left < 0:
        left = '- (not playing, or the pace is not measured yet)'
    else:
        left = f'{progress.time_left:.1f} s'
    rate = f'{progress.rate:.3f}x' if progress.rate > 0 else '- (not measured: paused or idle)'
    return '\n'.join([
        f'playback:  {progress.playback.value}',
        f'bag time:  {format_time(progress.bag_time_ns)} ({progress.percent:.1f}% of '
        f'{format_time(progress.start_ns)} to {format_time(progress.end_ns)})',
        f'messages:  {progress.messages_out} of {progress.messages_total} out since the last '
        f'reset',
        f'epoch:     {progress.epoch}',
        f'rate:      {rate}',
        f'time left: {left}',
    ])


def format_progress_line(progress) -> str:
    """Return the one line ``progress --follow`` shows: the bag player's own progress line."""
    return progress.line() + f'  epoch {progress.epoch}'


def format_reset(event) -> str:
    """Return the line ``resets`` prints for a :class:`~sim_clock.client.api.ResetEvent`."""
    state = event.mode if event.mode == 'real_time' else (
        f'{event.mode}, sync {"on" if event.sync else "off"}')
    return (f'epoch {event.epoch}: {format_time(event.time_before_ns)} -> '
            f'{format_time(event.time_after_ns)} ({state}): {event.cause}')


def format_step(result) -> str:
    """Return where a step left time: frame, time and epoch (a StepResult or a Status)."""
    return f'frame {result.frame}, time {format_time(result.time_ns)} (epoch {result.epoch})'
