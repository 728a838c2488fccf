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

"""What ServerControl returns to the services: each service's answer, field for field."""

from dataclasses import dataclass
from dataclasses import field
from typing import List

from builtin_interfaces.msg import Time as TimeMsg
from sim_clock.core.units import split_ns


def time_msg(time_ns: int) -> TimeMsg:
    """Return ``time_ns`` as a builtin_interfaces/Time."""
    stamp = TimeMsg()
    stamp.sec, stamp.nanosec = split_ns(time_ns)
    return stamp


@dataclass
class Answer:
    """The outcome of a request that only succeeds or not: the std_srvs services."""

    success: bool
    message: str


@dataclass
class SyncOutcome:
    """The outcome of ``~/sync_mode_cmd``, field for field."""

    result: bool
    user_id: str
    message: str
    frame: int
    time_step: int


@dataclass
class ServerStatus:
    """``~/get_status``, field for field; ``owner`` is the sync holder."""

    mode: str
    sync: bool
    paused: bool
    frame: int
    clock_ns: int
    epoch: int
    owner: str
    real_time_factor: float
    time_step_ns: int
    publish_rate: float
    participants: List[str]
    participants_done: List[TimeMsg]
    participants_slowest: List[float]
    waiting_for: List[str]
    other_clock_sources: List[str]
    clock_views: List[str]
    max_clock_rate: float = 0.0
    clock_stride: int = 1
    output_gates: List[str] = field(default_factory=list)
    output_gates_satisfied: List[TimeMsg] = field(default_factory=list)
    output_gates_slowest: List[float] = field(default_factory=list)
    output_gates_waiting: List[str] = field(default_factory=list)
    expected_participants: List[str] = field(default_factory=list)
    expected_missing: List[str] = field(default_factory=list)
