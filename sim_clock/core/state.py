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

"""What the timeline reports: a snapshot of its state, and a record of each change."""

from dataclasses import dataclass
import enum
from fractions import Fraction

from sim_clock.core.rules import Mode


@dataclass(frozen=True)
class ClockState:
    """A consistent snapshot of the timeline."""

    mode: Mode
    sync: bool
    paused: bool
    frame: int
    time_ns: int
    epoch: int
    holder: str
    time_step_ns: int
    real_time_factor: Fraction
    holder_timeout_ns: int


class ChangeKind(enum.Enum):
    """What a :class:`Change` changed."""

    #: Time and frame went back to the start, or to a seek's time; the epoch counts these.
    RESET = 'reset'
    PAUSE = 'pause'
    RESUME = 'resume'
    TIME_STEP = 'time_step'
    REAL_TIME_FACTOR = 'real_time_factor'
    #: The sync holder changed without a reset: taken, released by an operator.
    HOLDER = 'holder'
    #: The sync holder was silent for owner_timeout and lost its lease.
    LAPSE = 'lapse'


@dataclass(frozen=True)
class Change:
    """
    One change of the timeline's state, as listeners receive it.

    ``cause`` says why in words; the state after the change follows.
    """

    kind: ChangeKind
    cause: str
    epoch: int
    time_before_ns: int
    time_after_ns: int
    mode: Mode
    sync: bool
    paused: bool
    holder: str

    @property
    def reset(self) -> bool:
        """Whether time and frame went back to the start (the epoch grew by one)."""
        return self.kind is ChangeKind.RESET


def describe(mode: Mode, sync: bool) -> str:
    """Name a (mode, sync) pair in words."""
    if mode is Mode.REAL_TIME:
        return mode.value
    return f'{mode.value} (sync {"on" if sync else "off"})'
