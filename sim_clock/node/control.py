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
The control calls of a clock server: sync mode, pause, resume, reset, and its status.

What ``~/sync_mode_cmd``, ``~/set_sync``, ``~/pause``, ``~/resume``, ``~/reset`` and
``~/get_status`` do (``services.ControlServices``), and the bag player's services and keys
with them. No node and no server: the time core decides, each change is announced through
the change dispatch, and the status reads the parts that know it.
"""

from typing import Callable
from typing import List

from sim_clock.core.axes import Axes
from sim_clock.core.rules import Refused
from sim_clock.core.settings import Core
from sim_clock.core.units import NS_PER_MS
from sim_clock.core.units import NS_PER_SEC
from sim_clock.node.engine.parts import Changes
from sim_clock.node.engine.parts import Logger
from sim_clock.node.outcomes import Answer
from sim_clock.node.outcomes import SyncOutcome
from sim_clock.wire.status import Status


class ServerControl:
    """
    Change the timeline of ``core`` as an operator or a sync client asks; say its status.

    ``changes``: the server's change dispatch (every change goes through it);
    ``describe_views``, ``other_sources`` and ``missing``: the clock views in words, the other
    publishers of /clock, and what each expected node lacks, for the status.
    """

    def __init__(self, core: Core, changes: Changes, axes: Axes, logger: Logger,
                 describe_views: Callable[[], List[str]],
                 other_sources: Callable[[], List[str]],
                 missing: Callable[[], List[str]]):
        self._core = core
        self._timeline = core.timeline
        self._changes = changes
        self._to_clock = axes.to_clock
        self._logger = logger
        self._describe_views = describe_views
        self._other_sources = other_sources
        self._missing = missing

    def clock_now(self) -> int:
        """Return the /clock value of the current time."""
        return self._to_clock(self._timeline.time_ns)

    def sync_mode_cmd(self, user_id: str, start: bool, time_step_ms: int) -> SyncOutcome:
        """Take or give up sync mode, MORAI's way."""
        timeline = self._timeline
        try:
            user_id, message = self._changes.apply(
                lambda: timeline.sync_mode_cmd(user_id, start, time_step_ms))
            result = True
            self._logger.info(f'sync_mode_cmd from {user_id!r}: {message}')
        except Refused as refused:
            result, user_id, message = False, refused.holder, refused.reason
            self._logger.warning(f'sync_mode_cmd refused: {message}')
        status = timeline.status()
        return SyncOutcome(result=result, user_id=user_id, message=message, frame=status.frame,
                           time_step=status.time_step_ns // NS_PER_MS)

    def set_sync(self, on: bool) -> Answer:
        """Sync on with no holder, or off releasing any holder (the operator's override)."""
        timeline = self._timeline
        holder = timeline.holder
        changed = self._changes.apply(lambda: timeline.set_sync(on, switch_mode=True))
        state = 'on' if on else 'off'
        message = f'sync {state}' if changed else f'sync was already {state}'
        if holder and not on:
            message += f'; lease of {holder!r} released'
            self._logger.info(f'sync turned off by an operator; {holder!r} released')
        return Answer(success=True, message=message)

    def pause(self) -> Answer:
        """Freeze real-time and free-run time."""
        changed = self._changes.apply(lambda: self._timeline.set_paused(True))
        return Answer(success=True, message=(
            f'paused at {self.clock_now()} ns' if changed else 'already paused'))

    def resume(self) -> Answer:
        """Unfreeze time."""
        changed = self._changes.apply(lambda: self._timeline.set_paused(False))
        return Answer(success=True, message=(
            f'resumed at {self.clock_now()} ns' if changed else 'not paused'))

    def reset(self) -> Answer:
        """Time and frame back to the start, epoch + 1; mode, sync and holder stay."""
        self._changes.apply(lambda: self._timeline.reset('~/reset called'))
        return Answer(success=True, message=f'time reset to {self.clock_now()} ns '
                                            f'(epoch {self._timeline.epoch})')

    def status(self) -> Status:
        """Return the state as ``~/get_status`` answers it."""
        core = self._core
        s = self._timeline.status()
        barrier = core.barrier
        joined = sorted(barrier.participants.values(), key=lambda p: p.name)
        gates = list(core.gates.gates.values())
        return Status(
            mode=s.mode.value, sync=s.sync, paused=s.paused, frame=s.frame,
            time_ns=self._to_clock(s.time_ns), epoch=s.epoch, owner=s.holder,
            real_time_factor=float(s.real_time_factor), time_step_ns=s.time_step_ns,
            publish_rate=NS_PER_SEC / core.pacing.publish_period_ns,
            participants=tuple(p.name for p in joined),
            participants_done_ns=tuple(p.last_done_ns or 0 for p in joined),
            participants_slowest=tuple(p.slowest_ns / NS_PER_SEC for p in joined),
            waiting_for=tuple(barrier.waiting_for),
            other_clock_sources=tuple(self._other_sources()),
            clock_views=tuple(self._describe_views()),
            max_clock_rate=float(core.rate_cap.max_rate), clock_stride=core.rate_cap.stride,
            output_gates=tuple(gate.spec.text for gate in gates),
            output_gates_satisfied_ns=tuple(gate.last_satisfied_ns or 0 for gate in gates),
            output_gates_slowest=tuple(gate.slowest_ns / NS_PER_SEC for gate in gates),
            output_gates_waiting=tuple(core.gates.waiting_for),
            expected_participants=tuple(core.roster.expected),
            expected_missing=tuple(self._missing()))
