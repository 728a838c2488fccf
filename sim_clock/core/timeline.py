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
The state of a clock server and every rule that changes it, as integer nanoseconds.

The steady clock is injected (``now_ns``), as rosbag2's ``TimeControllerClock`` takes
``now_fn``; pacing follows its reference-point model (doc/design.md, "The time core").
Every refusal raises :class:`Refused` before any state has changed, and every change is
reported as a :class:`Change` record (:meth:`Timeline.take_changes`). Who holds sync mode, and
who may step, start or stop it, is :class:`~sim_clock.core.sync_lease.SyncLease`'s to say.
"""

from fractions import Fraction
import time
from typing import Callable
from typing import List
from typing import Optional
import uuid

from sim_clock.core.pacing import frame_period_ns
from sim_clock.core.pacing import frames_due
from sim_clock.core.rules import check_mode_sync
from sim_clock.core.rules import check_real_time_factor
from sim_clock.core.rules import check_steps
from sim_clock.core.rules import check_time_step_ns
from sim_clock.core.rules import check_user_id
from sim_clock.core.rules import check_whole_steps
from sim_clock.core.rules import Mode
from sim_clock.core.rules import Refused
from sim_clock.core.rules import runs_by_itself
from sim_clock.core.rules import time_step_from_ms
from sim_clock.core.state import Change
from sim_clock.core.state import ChangeKind
from sim_clock.core.state import ClockState
from sim_clock.core.state import describe
from sim_clock.core.sync_lease import SyncLease
from sim_clock.core.units import MAX_TIME_NS
from sim_clock.core.units import NS_PER_MS


def _default_user_id() -> str:
    return 'user-' + uuid.uuid4().hex[:12]


class Timeline:
    """
    The state of a clock server and every rule that changes it.

    What every frame reads (``mode``, ``sync``, ``frame``, ``time_ns``, ``epoch``,
    ``epoch_start_ns``, ``time_step_ns``, ``free_running``, ``changed``) is a plain attribute,
    read by the node's parts and written only by the timeline's own methods: a property would
    be a Python call on each read.
    """

    def __init__(
        self,
        now_ns: Callable[[], int] = time.monotonic_ns,
        *,
        mode: Mode = Mode.SIMULATION,
        sync: bool = False,
        paused: bool = False,
        time_step_ns: int = 10 * NS_PER_MS,
        real_time_factor: Fraction = Fraction(1),
        holder_timeout_ns: int = 0,
        new_user_id: Callable[[], str] = _default_user_id,
        start_ns: Optional[int] = 0,
        wall_ns: Callable[[], int] = time.time_ns,
    ):
        check_mode_sync(mode, sync)
        check_time_step_ns(time_step_ns)
        check_real_time_factor(Fraction(real_time_factor))
        self._now_ns = now_ns
        self._new_user_id = new_user_id
        self._set_run(mode, sync, paused)
        #: The length of one frame in ns.
        self.time_step_ns = time_step_ns
        self._rtf = Fraction(real_time_factor)
        self._lease = SyncLease(now_ns, holder_timeout_ns)
        self._start_ns = start_ns
        self._wall_ns = wall_ns
        #: The frames since the last reset.
        self.frame = 0
        #: The current simulated time in ns.
        self.time_ns = self._origin_ns()
        #: Where the current epoch began (the time after the last reset).
        self.epoch_start_ns = self.time_ns
        #: The number of resets so far.
        self.epoch = 0
        self._changes: List[Change] = []
        #: Whether changes were recorded since :meth:`take_changes` last took them.
        self.changed = False
        self._snapshot()

    # -- reading -------------------------------------------------------------------------------

    def status(self) -> ClockState:
        """Return a snapshot of the whole state."""
        return ClockState(
            mode=self.mode, sync=self.sync, paused=self._paused, frame=self.frame,
            time_ns=self.time_ns, epoch=self.epoch, holder=self._lease.holder,
            time_step_ns=self.time_step_ns, real_time_factor=self._rtf,
            holder_timeout_ns=self._lease.timeout_ns)

    @property
    def real_time_factor(self) -> Fraction:
        """Return free run's pace: simulated over wall time (0: as fast as possible)."""
        return self._rtf

    @property
    def holder(self) -> str:
        """Return the user_id that holds sync mode, or ''."""
        return self._lease.holder

    def frame_period_ns(self) -> Optional[Fraction]:
        """
        Return the wall time between free-run frames, in ns.

        None when frames are not paced by the wall clock (real-time mode, sync, paused) and
        0 when they come as fast as possible.
        """
        if self.mode is Mode.REAL_TIME or not self.free_running:
            return None
        return frame_period_ns(self._rtf, self.time_step_ns)

    def take_changes(self) -> List[Change]:
        """Return the changes since the last call, oldest first, and forget them."""
        changes, self._changes = self._changes, []
        self.changed = False
        return changes

    # -- advancing -----------------------------------------------------------------------------

    def poll(self, limit: int) -> range:
        """
        Advance to what the steady clock says is due now; return the times of the new frames.

        Real-time mode yields at most one new frame (the wall-derived time, if it moved). Free
        run yields every frame due by now, at most ``limit`` (the rest stay due for the next
        call); with a real-time factor of 0, exactly ``limit``. Sync mode and pause yield none.
        Time stops short of :data:`MAX_TIME_NS` rather than overflow.
        """
        if not self.free_running or limit <= 0:
            return range(0)
        if self.mode is Mode.REAL_TIME:
            target = min(self._ref_time_ns + (self._now_ns() - self._ref_steady_ns), MAX_TIME_NS)
            if target <= self.time_ns:
                return range(0)
            self.time_ns = target
            self.frame += 1
            return range(target, target + 1)
        if not self._rtf:
            count = limit
        else:
            due = frames_due(self._now_ns() - self._ref_steady_ns, self._rtf, self.time_step_ns)
            count = min(self._ref_frame + due - self.frame, limit)
        count = min(count, (MAX_TIME_NS - self.time_ns) // self.time_step_ns)
        return self._advance(max(count, 0))

    def skip(self, count: int) -> None:
        """
        Advance ``count`` frames that are not published: free run goes over frames with nothing.

        Time and the frame counter move as :meth:`poll` would move them (stopping short of
        :data:`MAX_TIME_NS`); no frame is returned, so none goes out.
        """
        count = min(count, (MAX_TIME_NS - self.time_ns) // self.time_step_ns)
        if count > 0:
            self._advance(count)

    def check_step(self, user_id: str, steps: int, target_frame: int = 0,
                   epoch: Optional[int] = None) -> int:
        """
        Refuse what :meth:`step` would refuse, changing nothing (a lapsed lease lapses, though).

        Allowed in simulation mode with sync on (only for the holder, if one holds it) or while
        paused. Return the frames the step advances: ``steps``, or with ``target_frame`` > 0
        the frames up to it (0 when it is reached: a retried call advances nothing). With
        ``epoch`` given, refuse unless no reset came since the caller saw that epoch.
        """
        check_user_id(user_id)
        lease = self._lease
        if lease.holder:  # with no holder, no lease lapses and any user_id may step
            self.release_lapsed_holder()
        check_whole_steps(steps)
        check_whole_steps(target_frame)
        if self.mode is Mode.REAL_TIME:
            raise Refused(
                'cannot step in real_time mode (time follows the wall clock); switch to '
                'simulation with sync on (~/sync_mode_cmd or ~/set_sync) or pause first')
        if not (self.sync or self._paused):
            raise Refused(
                'cannot step while time free-runs; turn sync mode on (~/sync_mode_cmd or '
                '~/set_sync) or pause first')
        if lease.holder:
            lease.check_step(user_id)
        if epoch is not None and epoch != self.epoch:
            raise Refused(
                f'time was reset since the caller saw it: epoch is {self.epoch}, the request '
                f'expected {epoch}; nothing advanced (ask ~/get_status, then step again)')
        if target_frame < 0:
            raise Refused(f'target_frame must be 0 (use steps) or more, got {target_frame}')
        if target_frame:
            steps = target_frame - self.frame
            if steps <= 0:
                return 0
        check_steps(steps, self.time_ns, self.time_step_ns)
        return steps

    def step(self, user_id: str, steps: int, target_frame: int = 0,
             epoch: Optional[int] = None) -> range:
        """
        Advance ``steps`` frames (or up to ``target_frame``) for ``user_id``; return the times.

        Refused (:meth:`check_step`) with nothing changed; a target already reached advances
        nothing (an empty range).
        """
        steps = self.check_step(user_id, steps, target_frame, epoch)
        if self._lease.holder:
            self._lease.heard_from()
        # No new reference point (_snapshot): only free run reads it, and every way into free
        # run (resume, a switch of mode or sync with its reset) takes one.
        return self._advance(steps)

    # -- control -------------------------------------------------------------------------------

    def sync_mode_cmd(self, user_id: str, start: bool, time_step_ms: int) -> tuple:
        """
        Take or give up sync mode with MORAI's semantics; return (user_id, message).

        Start: an empty ``user_id`` gets one assigned. From real-time mode or free run, this
        switches to simulation with sync on (one reset); if sync is already on without a
        holder, the caller takes the lease without a reset. Stop: only the holder (or anyone,
        when nobody holds it) turns sync off, back to free run (one reset). ``time_step_ms`` (0
        keeps the current step) applies in both cases. Another user's request is refused with
        :attr:`Refused.holder` set.
        """
        self.release_lapsed_holder()
        try:
            check_user_id(user_id)
            new_step_ns = (time_step_from_ms(time_step_ms) if time_step_ms
                           else self.time_step_ns)
        except Refused as refused:
            # Every refusal names the holder, as MORAI's response does.
            raise self._lease.refusal(refused.reason) from None
        self._lease.check_command(user_id, start)
        sync_on = self.mode is Mode.SIMULATION and self.sync
        if start or sync_on:
            # A stop while sync is already off changes nothing, time_step included.
            self._set_time_step_ns(new_step_ns)
        if start:
            user_id = user_id or self._new_user_id()
            if sync_on:
                if self._lease.holder == user_id:
                    message = 'sync mode held'
                else:
                    message = 'sync mode taken (no reset: it was already on)'
                    self._lease.take(user_id)
                    self._record(ChangeKind.HOLDER, f'sync mode taken by {user_id}')
            else:
                self._lease.take(user_id)
                self._switch(Mode.SIMULATION, True, 'sync mode turned on by ' + user_id)
                message = f'sync mode on; time reset to 0 (epoch {self.epoch})'
            self._lease.heard_from()
            return user_id, message
        if not sync_on:
            return user_id, 'sync mode was already off; nothing changed'
        self._lease.release()
        self._switch(Mode.SIMULATION, False, 'sync mode turned off by ' + (user_id or 'a user'))
        return user_id, f'sync mode off, free run; time reset to 0 (epoch {self.epoch})'

    def set_sync(self, sync: bool, *, switch_mode: bool = False) -> bool:
        """
        Turn sync on or off as an operator (no holder); return whether the state changed.

        Turning it off releases any holder (the operator's override). In real-time mode, sync
        is refused unless ``switch_mode`` is set (then it switches to simulation, one reset).
        """
        if not sync:
            released = bool(self._lease.holder)
            changed = self.set_mode_sync(self.mode, False)
            if released and not changed:
                self._release_holder(ChangeKind.HOLDER, 'sync lease released by an operator')
            return changed or released
        if not switch_mode:
            check_mode_sync(self.mode, sync)
        return self.set_mode_sync(Mode.SIMULATION, True)

    def set_mode_sync(self, mode: Mode, sync: bool) -> bool:
        """
        Move to a (mode, sync) pair with at most one reset; return whether it changed.

        Any change drops the holder; no change keeps it.
        """
        check_mode_sync(mode, sync)
        if mode is self.mode and sync == self.sync:
            return False
        before = describe(self.mode, self.sync)
        self._lease.release()
        self._switch(mode, sync, f'{before} -> {describe(mode, sync)}')
        return True

    def set_paused(self, paused: bool) -> bool:
        """Pause or resume; return whether the state changed. Time does not jump either way."""
        if paused == self._paused:
            return False
        self._catch_up_real_time()
        self._set_run(self.mode, self.sync, paused)
        self._snapshot()
        self._record(ChangeKind.PAUSE if paused else ChangeKind.RESUME,
                     ('paused' if paused else 'resumed') + f' at {self.time_ns} ns')
        return True

    def set_time_step_ns(self, time_step_ns: int) -> bool:
        """Change the frame length from the next frame on (no reset)."""
        return self._set_time_step_ns(check_time_step_ns(time_step_ns))

    def set_real_time_factor(self, factor: Fraction) -> bool:
        """Change the free-run pace from now on (no reset, no jump)."""
        factor = check_real_time_factor(Fraction(factor))
        if factor == self._rtf:
            return False
        self._catch_up_real_time()
        self._rtf = factor
        self._snapshot()
        self._record(ChangeKind.REAL_TIME_FACTOR, f'real_time_factor {float(factor):g}')
        return True

    def set_holder_timeout_ns(self, timeout_ns: int) -> None:
        """Let the lease lapse after ``timeout_ns`` without a call from the holder (0: never)."""
        self._lease.set_timeout_ns(timeout_ns)

    def reset(self, reason: str = 'reset requested') -> None:
        """Set time to the start and frame to zero, bump the epoch; mode, sync, holder stay."""
        self._reset(reason)

    def set_start_ns(self, start_ns: Optional[int]) -> None:
        """Where time starts at the next reset: ns, or None for the wall clock then."""
        self._start_ns = start_ns

    def seek(self, time_ns: int, reason: str = 'seek requested') -> None:
        """
        Reset to ``time_ns`` instead of zero: frame 0, epoch + 1; mode, sync and holder stay.

        A seek is a reset (announced like one): a bag player's time jumps, either way.
        """
        if isinstance(time_ns, bool) or not isinstance(time_ns, int) or not (
                0 <= time_ns <= MAX_TIME_NS):
            raise Refused(f'seek time must be between 0 and {MAX_TIME_NS} ns, got {time_ns!r}')
        self._reset(reason, time_ns)

    def release_lapsed_holder(self) -> str:
        """Drop a holder silent for at least the holder timeout; return its id or ''."""
        if not self._lease.holder or not self._lease.lapsed():
            return ''
        lapsed = self._lease.holder
        self._release_holder(ChangeKind.LAPSE,
                             f'sync lease of {lapsed!r} lapsed after owner_timeout without a '
                             'call; sync stays on with no holder')
        return lapsed

    # -- internals -----------------------------------------------------------------------------

    def _advance(self, count: int) -> range:
        first = self.time_ns + self.time_step_ns
        self.time_ns += count * self.time_step_ns
        self.frame += count
        return range(first, self.time_ns + 1, self.time_step_ns)

    def _snapshot(self) -> None:
        self._ref_steady_ns = self._now_ns()
        self._ref_time_ns = self.time_ns
        self._ref_frame = self.frame

    def _catch_up_real_time(self) -> None:
        # Real-time mode: fold the time elapsed since the last poll into the state before a
        # new reference point is taken, so a pause or resume never loses or repeats time.
        if self.mode is Mode.REAL_TIME and not self._paused:
            target = min(self._ref_time_ns + (self._now_ns() - self._ref_steady_ns), MAX_TIME_NS)
            if target > self.time_ns:
                self.time_ns = target
                self.frame += 1

    def _set_time_step_ns(self, time_step_ns: int) -> bool:
        if time_step_ns == self.time_step_ns:
            return False
        self._catch_up_real_time()
        self.time_step_ns = time_step_ns
        self._snapshot()
        self._record(ChangeKind.TIME_STEP, f'time_step {time_step_ns} ns')
        return True

    def _release_holder(self, kind: ChangeKind, cause: str) -> None:
        if self._lease.release():
            self._record(kind, cause)

    def _switch(self, mode: Mode, sync: bool, reason: str) -> None:
        self._set_run(mode, sync, self._paused)
        self._reset(reason)

    def _set_run(self, mode: Mode, sync: bool, paused: bool) -> None:
        """Set mode, sync and pause, and whether time runs by itself with them."""
        self.mode, self.sync, self._paused = mode, sync, paused
        #: Whether time advances by itself (real-time or free run, not paused). Set only
        #: here, with mode, sync and pause; a plain attribute: every frame reads it.
        self.free_running = runs_by_itself(mode, sync, paused)

    def _origin_ns(self) -> int:
        """Return where time starts: start_ns, or the wall clock now (None)."""
        return min(self._wall_ns(), MAX_TIME_NS) if self._start_ns is None else self._start_ns

    def _reset(self, reason: str, time_ns: Optional[int] = None) -> None:
        before = self.time_ns
        self.time_ns = self._origin_ns() if time_ns is None else time_ns
        self.epoch_start_ns = self.time_ns
        self.frame = 0
        self.epoch += 1
        self._snapshot()
        self._record(ChangeKind.RESET, reason, time_before_ns=before)

    def _record(self, kind: ChangeKind, cause: str,
                time_before_ns: Optional[int] = None) -> None:
        self.changed = True
        self._changes.append(Change(
            kind=kind, cause=cause, epoch=self.epoch,
            time_before_ns=self.time_ns if time_before_ns is None else time_before_ns,
            time_after_ns=self.time_ns, mode=self.mode, sync=self.sync,
            paused=self._paused, holder=self._lease.holder))
