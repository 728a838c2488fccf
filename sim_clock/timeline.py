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
Simulated time as integer nanoseconds, free of any ROS import.

The :class:`Timeline` holds the whole state of a clock server: the mode (real-time or
simulation, with sync mode off or on), the current time and frame, the number of resets so far
(the epoch), pause, the real-time factor and who holds sync mode. It never reads a clock by
itself: the steady clock is injected (``now_ns``) so tests drive time by hand, as rosbag2's
``TimeControllerClock`` takes ``now_fn``.

Pacing follows rosbag2's reference-point model: a snapshot (steady time, frame) is taken on
every pause, resume, rate or step change, and the frames due at a given steady time are
computed from that snapshot with integer arithmetic. Pacing error therefore never accumulates,
whatever the run length.

Every request that the timeline turns down raises :class:`Refused` with a reason that says what
was wrong and what is allowed, before any state has changed. (A hold whose owner timeout has
passed lapses whenever the timeline next looks at the holder, refused request or not: the lapse
is due to time, not to the request.)
"""

from dataclasses import dataclass
import decimal
import enum
from fractions import Fraction
import math
import time
from typing import Callable
from typing import Optional
import uuid

NS_PER_SEC = 1_000_000_000
NS_PER_MS = 1_000_000

#: The latest time a ``builtin_interfaces/Time`` can carry (its ``sec`` is an int32).
MAX_TIME_NS = (2**31 - 1) * NS_PER_SEC + NS_PER_SEC - 1
#: One frame is at most a day long.
MAX_TIME_STEP_NS = 86_400 * NS_PER_SEC
#: The most frames one step call may advance: a call is answered in about a second at most.
MAX_STEPS_PER_CALL = 1_000_000
#: The fastest paced free run; above it, use 0 (as fast as possible).
MAX_REAL_TIME_FACTOR = 10_000
#: The longest user_id accepted, in characters.
MAX_USER_ID_LENGTH = 256


class Mode(enum.Enum):
    """How simulated time advances."""

    REAL_TIME = 'real_time'
    SIMULATION = 'simulation'


MODE_NAMES = tuple(mode.value for mode in Mode)


class Refused(ValueError):
    """A request turned down; nothing changed. ``holder`` names the sync holder if it matters."""

    def __init__(self, reason: str, holder: str = ''):
        super().__init__(reason)
        self.reason = reason
        self.holder = holder


@dataclass(frozen=True)
class Status:
    """A consistent snapshot of the timeline."""

    mode: Mode
    sync: bool
    paused: bool
    frame: int
    time_ns: int
    epoch: int
    owner: str
    time_step_ns: int
    real_time_factor: Fraction
    owner_timeout_ns: int


def _finite_decimal(value: float, name: str) -> decimal.Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Refused(f'{name} must be a number, got {value!r}')
    if not math.isfinite(value):
        raise Refused(f'{name} must be a finite number, got {value!r}')
    # repr() gives the shortest decimal that round-trips: 0.01 becomes exactly 1/100.
    return decimal.Decimal(repr(value)) if isinstance(value, float) else decimal.Decimal(value)


def seconds_to_ns(seconds: float, name: str = 'value') -> int:
    """Convert seconds (a parameter value) to integer nanoseconds, once, rounding to nearest."""
    exact = _finite_decimal(seconds, name) * NS_PER_SEC
    return int(exact.to_integral_value(rounding=decimal.ROUND_HALF_EVEN))


def time_step_from_seconds(seconds: float) -> int:
    """Validate a frame length given in seconds and return it in nanoseconds."""
    ns = seconds_to_ns(seconds, 'time_step')
    if not 1 <= ns <= MAX_TIME_STEP_NS:
        raise Refused(
            f'time_step must be between 1e-09 and {MAX_TIME_STEP_NS // NS_PER_SEC} s, '
            f'got {seconds!r}')
    return ns


def time_step_from_ms(milliseconds: int) -> int:
    """Validate a frame length given in whole milliseconds (SyncModeCmd) and return ns."""
    if isinstance(milliseconds, bool) or not isinstance(milliseconds, int):
        raise Refused(f'time_step must be a whole number of ms, got {milliseconds!r}')
    if not 1 <= milliseconds <= MAX_TIME_STEP_NS // NS_PER_MS:
        raise Refused(
            f'time_step must be between 1 and {MAX_TIME_STEP_NS // NS_PER_MS} ms '
            f'(0 keeps the current step), got {milliseconds}')
    return milliseconds * NS_PER_MS


def real_time_factor_from_float(value: float) -> Fraction:
    """Validate a real-time factor and return it as an exact fraction."""
    exact = _finite_decimal(value, 'real_time_factor')
    if not 0 <= exact <= MAX_REAL_TIME_FACTOR:
        raise Refused(
            f'real_time_factor must be between 0 (as fast as possible) and '
            f'{MAX_REAL_TIME_FACTOR}, got {value!r}')
    return Fraction(exact)


def owner_timeout_from_seconds(seconds: float) -> int:
    """Validate the sync-hold timeout (0 disables it) and return it in nanoseconds."""
    ns = seconds_to_ns(seconds, 'owner_timeout')
    if ns < 0:
        raise Refused(f'owner_timeout must be >= 0 s (0: a hold never lapses), got {seconds!r}')
    return ns


def parse_mode(value: str) -> Mode:
    """Return the Mode named by ``value`` or refuse, listing the names allowed."""
    for mode in Mode:
        if value == mode.value:
            return mode
    raise Refused(f'mode must be one of {", ".join(MODE_NAMES)}; got {value!r}')


def split_ns(time_ns: int) -> tuple:
    """Split nanoseconds into (sec, nanosec), as ``builtin_interfaces/Time`` holds them."""
    return divmod(time_ns, NS_PER_SEC)


def _default_user_id() -> str:
    return 'user-' + uuid.uuid4().hex[:12]


def _check_user_id(user_id: str) -> None:
    if not isinstance(user_id, str):
        raise Refused(f'user_id must be a string, got {type(user_id).__name__}')
    if len(user_id) > MAX_USER_ID_LENGTH:
        raise Refused(
            f'user_id is {len(user_id)} characters long; at most {MAX_USER_ID_LENGTH} allowed')
    if not user_id.isprintable():
        raise Refused('user_id must be printable text (no control characters)')


class Timeline:
    """The state of a clock server and every rule that changes it."""

    def __init__(
        self,
        now_ns: Callable[[], int] = time.monotonic_ns,
        *,
        mode: Mode = Mode.SIMULATION,
        sync: bool = False,
        paused: bool = False,
        time_step_ns: int = 10 * NS_PER_MS,
        real_time_factor: Fraction = Fraction(1),
        owner_timeout_ns: int = 0,
        new_user_id: Callable[[], str] = _default_user_id,
    ):
        if mode is Mode.REAL_TIME and sync:
            raise Refused(_SYNC_NEEDS_SIMULATION)
        if not 1 <= time_step_ns <= MAX_TIME_STEP_NS:
            raise Refused(f'time_step_ns out of range: {time_step_ns}')
        if not 0 <= real_time_factor <= MAX_REAL_TIME_FACTOR:
            raise Refused(f'real_time_factor out of range: {real_time_factor}')
        self._now_ns = now_ns
        self._new_user_id = new_user_id
        self._mode = mode
        self._sync = sync
        self._paused = paused
        self._time_step_ns = time_step_ns
        self._rtf = Fraction(real_time_factor)
        self._owner_timeout_ns = owner_timeout_ns
        self._owner = ''
        self._owner_seen_ns = 0
        self._frame = 0
        self._time_ns = 0
        self._epoch = 0
        self.last_reset_reason = ''
        self._snapshot()

    # -- reading -------------------------------------------------------------------------------

    def status(self) -> Status:
        """Return a snapshot of the whole state."""
        return Status(
            mode=self._mode, sync=self._sync, paused=self._paused, frame=self._frame,
            time_ns=self._time_ns, epoch=self._epoch, owner=self._owner,
            time_step_ns=self._time_step_ns, real_time_factor=self._rtf,
            owner_timeout_ns=self._owner_timeout_ns)

    @property
    def time_ns(self) -> int:
        """Return the current simulated time in nanoseconds."""
        return self._time_ns

    @property
    def frame(self) -> int:
        """Return the frames since the last reset."""
        return self._frame

    @property
    def epoch(self) -> int:
        """Return the number of resets so far."""
        return self._epoch

    @property
    def time_step_ns(self) -> int:
        """Return the length of one frame in nanoseconds."""
        return self._time_step_ns

    @property
    def owner(self) -> str:
        """Return the user_id that holds sync mode, or ''."""
        return self._owner

    @property
    def free_running(self) -> bool:
        """Whether time advances by itself (real-time or free run, not paused)."""
        return not self._paused and not (self._mode is Mode.SIMULATION and self._sync)

    def frame_period_ns(self) -> Optional[Fraction]:
        """
        Return the wall time between free-run frames, in ns.

        None when frames are not paced by the wall clock (real-time mode, sync, paused) and
        0 when they come as fast as possible.
        """
        if self._mode is Mode.REAL_TIME or not self.free_running:
            return None
        if self._rtf == 0:
            return Fraction(0)
        return self._time_step_ns / self._rtf

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
        if self._mode is Mode.REAL_TIME:
            target = min(self._ref_time_ns + (self._now_ns() - self._ref_steady_ns), MAX_TIME_NS)
            if target <= self._time_ns:
                return range(0)
            self._time_ns = target
            self._frame += 1
            return range(target, target + 1)
        if self._rtf == 0:
            count = limit
        else:
            elapsed = self._now_ns() - self._ref_steady_ns
            rtf = self._rtf
            due = (elapsed * rtf.numerator) // (rtf.denominator * self._time_step_ns)
            count = min(self._ref_frame + due - self._frame, limit)
        count = min(count, (MAX_TIME_NS - self._time_ns) // self._time_step_ns)
        return self._advance(max(count, 0))

    def step(self, user_id: str, steps: int) -> range:
        """
        Advance ``steps`` frames for ``user_id``; return the times of the new frames.

        Allowed in simulation mode with sync on (only for the holder, if one holds it) or while
        paused. Refused otherwise, with nothing changed.
        """
        _check_user_id(user_id)
        self._expire_owner()
        if isinstance(steps, bool) or not isinstance(steps, int):
            raise Refused(f'steps must be a whole number, got {steps!r}')
        if self._mode is Mode.REAL_TIME:
            raise Refused(
                'cannot step in real_time mode (time follows the wall clock); switch to '
                'simulation with sync on (~/sync_mode_cmd or ~/set_sync) or pause first')
        if not (self._sync or self._paused):
            raise Refused(
                'cannot step while time free-runs; turn sync mode on (~/sync_mode_cmd or '
                '~/set_sync) or pause first')
        if self._owner and user_id != self._owner:
            raise Refused(
                f'sync mode is held by {self._owner!r}; only that user_id may step',
                holder=self._owner)
        if not 1 <= steps <= MAX_STEPS_PER_CALL:
            raise Refused(f'steps must be between 1 and {MAX_STEPS_PER_CALL}, got {steps}')
        if steps > (MAX_TIME_NS - self._time_ns) // self._time_step_ns:
            raise Refused(
                f'{steps} steps of {self._time_step_ns} ns from {self._time_ns} ns would pass '
                f'the latest representable time ({MAX_TIME_NS} ns); reset first')
        if self._owner:
            self._owner_seen_ns = self._now_ns()
        frames = self._advance(steps)
        self._snapshot()
        return frames

    # -- control -------------------------------------------------------------------------------

    def sync_mode_cmd(self, user_id: str, start: bool, time_step_ms: int) -> tuple:
        """
        Take or give up sync mode with MORAI's semantics; return (user_id, message).

        Start: an empty ``user_id`` gets one assigned. From real-time mode or free run, this
        switches to simulation with sync on (one reset); if sync is already on without a
        holder, the caller takes the hold without a reset. Stop: only the holder (or anyone,
        when nobody holds it) turns sync off, back to free run (one reset). ``time_step_ms`` (0
        keeps the current step) applies in both cases. Another user's request is refused with
        :attr:`Refused.holder` set.
        """
        self._expire_owner()
        try:
            _check_user_id(user_id)
            new_step_ns = (time_step_from_ms(time_step_ms) if time_step_ms
                           else self._time_step_ns)
        except Refused as refused:
            # Every refusal names the holder, as MORAI's response does.
            raise Refused(refused.reason, holder=self._owner) from None
        if self._owner and user_id != self._owner:
            verb = 'start' if start else 'stop'
            raise Refused(
                f'sync mode is held by {self._owner!r}; another user_id cannot {verb} it '
                f'(the holder releases it, or an operator calls ~/set_sync false)',
                holder=self._owner)
        if start or (self._mode is Mode.SIMULATION and self._sync):
            # A stop while sync is already off changes nothing, time_step included.
            self._set_time_step_ns(new_step_ns)
        if start:
            user_id = user_id or self._new_user_id()
            if self._mode is Mode.SIMULATION and self._sync:
                message = ('sync mode held' if self._owner == user_id
                           else 'sync mode taken (no reset: it was already on)')
            else:
                self._switch(Mode.SIMULATION, True, 'sync mode turned on by ' + user_id)
                message = f'sync mode on; time reset to 0 (epoch {self._epoch})'
            self._owner = user_id
            self._owner_seen_ns = self._now_ns()
            return user_id, message
        if not (self._mode is Mode.SIMULATION and self._sync):
            return user_id, 'sync mode was already off; nothing changed'
        self._owner = ''
        self._switch(Mode.SIMULATION, False, 'sync mode turned off by ' + (user_id or 'a user'))
        return user_id, f'sync mode off, free run; time reset to 0 (epoch {self._epoch})'

    def set_mode(self, mode: Mode) -> bool:
        """Switch mode (a reset). Leaving simulation turns sync off and drops any holder."""
        return self.set_mode_sync(mode, False if mode is Mode.REAL_TIME else self._sync)

    def set_sync(self, sync: bool, *, switch_mode: bool = False) -> bool:
        """
        Turn sync on or off as an operator (no holder); return whether the state changed.

        Turning it off releases any holder (the operator's override). In real-time mode, sync
        is refused unless ``switch_mode`` is set (then it switches to simulation, one reset).
        """
        if not sync:
            released = bool(self._owner)
            self._owner = ''
            return self.set_mode_sync(self._mode, False) or released
        if self._mode is Mode.REAL_TIME and not switch_mode:
            raise Refused(_SYNC_NEEDS_SIMULATION)
        return self.set_mode_sync(Mode.SIMULATION, True)

    def set_mode_sync(self, mode: Mode, sync: bool) -> bool:
        """
        Move to a (mode, sync) pair with at most one reset; return whether it changed.

        Any change drops the holder; no change keeps it.
        """
        if mode is Mode.REAL_TIME and sync:
            raise Refused(_SYNC_NEEDS_SIMULATION)
        if mode is self._mode and sync == self._sync:
            return False
        before = _describe(self._mode, self._sync)
        self._owner = ''
        self._switch(mode, sync, f'{before} -> {_describe(mode, sync)}')
        return True

    def set_paused(self, paused: bool) -> bool:
        """Pause or resume; return whether the state changed. Time does not jump either way."""
        if paused == self._paused:
            return False
        self._catch_up_real_time()
        self._paused = paused
        self._snapshot()
        return True

    def set_time_step_ns(self, time_step_ns: int) -> bool:
        """Change the frame length from the next frame on (no reset)."""
        if isinstance(time_step_ns, bool) or not isinstance(time_step_ns, int) or not (
                1 <= time_step_ns <= MAX_TIME_STEP_NS):
            raise Refused(
                f'time_step must be between 1 and {MAX_TIME_STEP_NS} ns, got {time_step_ns!r}')
        return self._set_time_step_ns(time_step_ns)

    def set_real_time_factor(self, factor: Fraction) -> bool:
        """Change the free-run pace from now on (no reset, no jump)."""
        factor = Fraction(factor)
        if not 0 <= factor <= MAX_REAL_TIME_FACTOR:
            raise Refused(
                f'real_time_factor must be between 0 and {MAX_REAL_TIME_FACTOR}, got {factor}')
        if factor == self._rtf:
            return False
        self._catch_up_real_time()
        self._rtf = factor
        self._snapshot()
        return True

    def set_owner_timeout_ns(self, timeout_ns: int) -> None:
        """Let a hold lapse after ``timeout_ns`` without a call from the holder (0: never)."""
        if timeout_ns < 0:
            raise Refused(f'owner_timeout must be >= 0, got {timeout_ns}')
        self._owner_timeout_ns = timeout_ns
        self._owner_seen_ns = self._now_ns()

    def reset(self, reason: str = 'reset requested') -> None:
        """Set time and frame to zero and bump the epoch; mode, sync and holder stay."""
        self._reset(reason)

    def seek(self, time_ns: int, reason: str = 'seek requested') -> None:
        """
        Reset to ``time_ns`` instead of zero: frame 0, epoch + 1; mode, sync and holder stay.

        A seek is a reset (announced like one): a bag player's time jumps, either way.
        """
        if isinstance(time_ns, bool) or not isinstance(time_ns, int) or not (
                0 <= time_ns <= MAX_TIME_NS):
            raise Refused(f'seek time must be between 0 and {MAX_TIME_NS} ns, got {time_ns!r}')
        self._reset(reason)
        self._time_ns = time_ns
        self._snapshot()

    def release_lapsed_owner(self) -> str:
        """Drop a holder silent for at least the owner timeout; return its id or ''."""
        return self._expire_owner()

    # -- internals -----------------------------------------------------------------------------

    def _advance(self, count: int) -> range:
        first = self._time_ns + self._time_step_ns
        self._time_ns += count * self._time_step_ns
        self._frame += count
        return range(first, self._time_ns + 1, self._time_step_ns)

    def _snapshot(self) -> None:
        self._ref_steady_ns = self._now_ns()
        self._ref_time_ns = self._time_ns
        self._ref_frame = self._frame

    def _catch_up_real_time(self) -> None:
        # Real-time mode: fold the time elapsed since the last poll into the state before a
        # new reference point is taken, so a pause or resume never loses or repeats time.
        if self._mode is Mode.REAL_TIME and not self._paused:
            target = min(self._ref_time_ns + (self._now_ns() - self._ref_steady_ns), MAX_TIME_NS)
            if target > self._time_ns:
                self._time_ns = target
                self._frame += 1

    def _set_time_step_ns(self, time_step_ns: int) -> bool:
        if time_step_ns == self._time_step_ns:
            return False
        self._catch_up_real_time()
        self._time_step_ns = time_step_ns
        self._snapshot()
        return True

    def _switch(self, mode: Mode, sync: bool, reason: str) -> None:
        self._mode = mode
        self._sync = sync
        self._reset(reason)

    def _reset(self, reason: str) -> None:
        self._time_ns = 0
        self._frame = 0
        self._epoch += 1
        self.last_reset_reason = reason
        self._snapshot()

    def _expire_owner(self) -> str:
        if not self._owner or not self._owner_timeout_ns:
            return ''
        if self._now_ns() - self._owner_seen_ns < self._owner_timeout_ns:
            return ''
        lapsed, self._owner = self._owner, ''
        return lapsed


def _describe(mode: Mode, sync: bool) -> str:
    if mode is Mode.REAL_TIME:
        return mode.value
    return f'{mode.value} (sync {"on" if sync else "off"})'


_SYNC_NEEDS_SIMULATION = (
    "sync applies to mode 'simulation' only; set mode to 'simulation' first, or call "
    '~/sync_mode_cmd or ~/set_sync, which switch to it')
