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

"""What is allowed: the modes, the limits, and the validators that refuse with one wording."""

import decimal
import enum
from fractions import Fraction
import math
import re

from sim_clock.core.units import MAX_TIME_NS
from sim_clock.core.units import NS_PER_MS
from sim_clock.core.units import NS_PER_SEC

#: One frame is at most a day long.
MAX_TIME_STEP_NS = 86_400 * NS_PER_SEC
#: The most frames one step call may advance: a call is answered in about a second at most.
MAX_STEPS_PER_CALL = 1_000_000
#: The fastest paced free run; above it, use 0 (as fast as possible).
MAX_REAL_TIME_FACTOR = 10_000
#: The largest /clock rate cap: beyond it a cap would not lower what a subscriber pays.
MAX_CLOCK_RATE = 1_000_000
#: The longest user_id accepted, in characters.
MAX_USER_ID_LENGTH = 256
#: The range of the /clock rate while time does not advance, in Hz.
MIN_PUBLISH_RATE = 0.1
MAX_PUBLISH_RATE = 10_000.0


class Mode(enum.Enum):
    """How simulated time advances."""

    REAL_TIME = 'real_time'
    SIMULATION = 'simulation'


MODE_NAMES = tuple(mode.value for mode in Mode)

SYNC_NEEDS_SIMULATION = (
    "sync applies to mode 'simulation' only; set mode to 'simulation' first, or call "
    '~/sync_mode_cmd or ~/set_sync, which switch to it')


class Refused(ValueError):
    """A request turned down; nothing changed. ``holder`` names the sync holder if it matters."""

    def __init__(self, reason: str, holder: str = ''):
        super().__init__(reason)
        self.reason = reason
        self.holder = holder


def check_mode_sync(mode: Mode, sync: bool) -> None:
    """Refuse the one combination that does not exist: sync in real-time mode."""
    if mode is Mode.REAL_TIME and sync:
        raise Refused(SYNC_NEEDS_SIMULATION)


def runs_by_itself(mode: Mode, sync: bool, paused: bool) -> bool:
    """Whether time advances without steps: real-time or free run, not paused."""
    return not paused and not (mode is Mode.SIMULATION and sync)


#: The modes in which frames wait for participants and output gates (``mode in HOLDING_MODES``,
#: asked at every frame with participants): real-time mode ignores them.
HOLDING_MODES = frozenset({Mode.SIMULATION})


def finite_decimal(value: float, name: str) -> decimal.Decimal:
    """Return a number as the exact decimal it was written as; refuse anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Refused(f'{name} must be a number, got {value!r}')
    if not math.isfinite(value):
        raise Refused(f'{name} must be a finite number, got {value!r}')
    # repr() gives the shortest decimal that round-trips: 0.01 becomes exactly 1/100.
    return decimal.Decimal(repr(value)) if isinstance(value, float) else decimal.Decimal(value)


def seconds_to_ns(seconds: float, name: str = 'value') -> int:
    """Convert seconds (a parameter value) to integer nanoseconds, once, rounding to nearest."""
    exact = finite_decimal(seconds, name) * NS_PER_SEC
    return int(exact.to_integral_value(rounding=decimal.ROUND_HALF_EVEN))


def _duration_from_seconds(seconds: float, name: str, lowest_ns: int, allowed: str) -> int:
    ns = seconds_to_ns(seconds, name)
    if not lowest_ns <= ns <= MAX_TIME_STEP_NS:
        raise Refused(f'{name} must be between {allowed} and {MAX_TIME_STEP_NS // NS_PER_SEC} s, '
                      f'got {seconds!r}')
    return ns


def parse_mode(value: str) -> Mode:
    """Return the Mode named by ``value`` or refuse, listing the names allowed."""
    for mode in Mode:
        if value == mode.value:
            return mode
    raise Refused(f'mode must be one of {", ".join(MODE_NAMES)}; got {value!r}')


def parse_bool(name: str):
    """Return a parser that accepts a bool only."""
    def parse(value) -> bool:
        if not isinstance(value, bool):
            raise Refused(f'{name} must be true or false, got {value!r}')
        return value
    return parse


def time_step_from_seconds(seconds: float) -> int:
    """Validate a frame length given in seconds and return it in nanoseconds."""
    return _duration_from_seconds(seconds, 'time_step', 1, '1e-09')


def check_time_step_ns(time_step_ns: int) -> int:
    """Validate a frame length in nanoseconds and return it."""
    if isinstance(time_step_ns, bool) or not isinstance(time_step_ns, int) or not (
            1 <= time_step_ns <= MAX_TIME_STEP_NS):
        raise Refused(
            f'time_step must be between 1 and {MAX_TIME_STEP_NS} ns, got {time_step_ns!r}')
    return time_step_ns


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
    exact = finite_decimal(value, 'real_time_factor')
    return check_real_time_factor(Fraction(exact), value)


def check_real_time_factor(factor: Fraction, given=None) -> Fraction:
    """Validate a real-time factor given as a fraction and return it."""
    if not 0 <= factor <= MAX_REAL_TIME_FACTOR:
        raise Refused(
            f'real_time_factor must be between 0 (as fast as possible) and '
            f'{MAX_REAL_TIME_FACTOR}, got {factor if given is None else repr(given)}')
    return factor


def max_clock_rate_from_float(value: float) -> Fraction:
    """Validate a /clock rate cap in Hz (0: none) and return it as an exact fraction."""
    exact = Fraction(finite_decimal(value, 'max_clock_rate'))
    if not 0 <= exact <= MAX_CLOCK_RATE:
        raise Refused(f'max_clock_rate must be 0 (no cap) or up to {MAX_CLOCK_RATE} Hz, '
                      f'got {value!r}')
    return exact


def owner_timeout_from_seconds(seconds: float) -> int:
    """Validate the sync-hold timeout (0 disables it) and return it in nanoseconds."""
    return check_owner_timeout_ns(seconds_to_ns(seconds, 'owner_timeout'), seconds)


def check_owner_timeout_ns(timeout_ns: int, given=None) -> int:
    """Validate the sync-hold timeout in nanoseconds and return it."""
    if timeout_ns < 0:
        raise Refused(
            'owner_timeout must be >= 0 s (0: a lease never lapses), got '
            f'{timeout_ns if given is None else repr(given)}')
    return timeout_ns


def participant_timeout_from_seconds(seconds: float) -> int:
    """Validate how long a frame waits for a participant and return it in nanoseconds."""
    return _duration_from_seconds(seconds, 'participant_timeout', NS_PER_MS, '0.001')


def ack_timeout_from_seconds(seconds: float) -> int:
    """Validate how long a step waits for acknowledgements (0: not at all); return ns."""
    return _duration_from_seconds(seconds, 'ack_timeout', 0, '0 (steps do not wait)')


#: start_time's value for the wall clock at the moment time starts or resets.
WALL_START = 'wall'
_START_TIME = re.compile(r'(\d{1,10})(?:\.(\d{1,9}))?')


def start_time_from_value(value):
    """
    Parse where time starts and resets go: ``'wall'`` -> None (the wall clock then), else ns.

    Seconds as a number (converted once, to the nearest ns) or as decimal text, exact to the
    nanosecond ('0', '1700000000.123456789').
    """
    if value == WALL_START:
        return None
    if isinstance(value, str):
        match = _START_TIME.fullmatch(value)
        time_ns = (int(match.group(1)) * NS_PER_SEC + int((match.group(2) or '').ljust(9, '0'))
                   if match else -1)
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and (
            isinstance(value, int) or math.isfinite(value)):
        time_ns = seconds_to_ns(value, 'start_time')
    else:
        time_ns = -1
    if not 0 <= time_ns <= MAX_TIME_NS:
        raise Refused(
            f'start_time must be {WALL_START!r} (the wall clock at each start and reset) or '
            f'seconds from 0 to {MAX_TIME_NS // NS_PER_SEC}, a number or decimal text exact to '
            f"the ns (e.g. 0, 1700000000.5, '1700000000.123456789'), got {value!r}")
    return time_ns


def publish_period_from_rate(rate_hz: float) -> int:
    """Validate the idle /clock rate in Hz and return its period in nanoseconds."""
    exact = finite_decimal(rate_hz, 'publish_rate')
    if not MIN_PUBLISH_RATE <= exact <= MAX_PUBLISH_RATE:
        raise Refused(
            f'publish_rate must be between {MIN_PUBLISH_RATE} and {MAX_PUBLISH_RATE} Hz, '
            f'got {rate_hz!r}')
    return round(NS_PER_SEC / Fraction(exact))


def check_user_id(user_id: str) -> None:
    """Refuse a user_id that is not short printable text."""
    if not isinstance(user_id, str):
        raise Refused(f'user_id must be a string, got {type(user_id).__name__}')
    if len(user_id) > MAX_USER_ID_LENGTH:
        raise Refused(
            f'user_id is {len(user_id)} characters long; at most {MAX_USER_ID_LENGTH} allowed')
    if not user_id.isprintable():
        raise Refused('user_id must be printable text (no control characters)')


def check_whole_steps(steps: int) -> None:
    """Refuse a number of steps that is not a whole number."""
    if isinstance(steps, bool) or not isinstance(steps, int):
        raise Refused(f'steps must be a whole number, got {steps!r}')


def check_steps(steps: int, time_ns: int, time_step_ns: int) -> None:
    """Refuse a number of steps out of range, or one that would pass the latest time."""
    if not 1 <= steps <= MAX_STEPS_PER_CALL:
        raise Refused(f'steps must be between 1 and {MAX_STEPS_PER_CALL}, got {steps}')
    if steps > (MAX_TIME_NS - time_ns) // time_step_ns:
        raise Refused(
            f'{steps} steps of {time_step_ns} ns from {time_ns} ns would pass '
            f'the latest representable time ({MAX_TIME_NS} ns); reset first')


def frames_until(time_ns: int, time_step_ns: int, target_ns: int) -> int:
    """
    Return the whole frames of ``time_step_ns`` from ``time_ns`` to reach ``target_ns``.

    The first frame at or after the target: a target between two frames is passed by less
    than a frame; one reached already takes 0 frames.
    """
    return max(0, -(-(target_ns - time_ns) // time_step_ns))
