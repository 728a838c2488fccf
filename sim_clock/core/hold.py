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
The hold: everything a frame waits for before the next one, participants and gates as one.

Two kinds of holder keep the same wait record (:class:`~sim_clock.core.waits.Awaited`): the
participants (:class:`~sim_clock.core.barrier.Barrier`: a done for each frame due for them)
and the output gates (:class:`~sim_clock.core.gates.Gates`: a message on a topic after a
gated frame, and a writer matched before it). :class:`Hold` asks both every question the frame
engine asks: how many frames go before one waits, whether the frames out are finished, who is
late and when the next one will be; with one timeout setting for both (``participant_timeout``).
"""

from dataclasses import dataclass
from dataclasses import field
from typing import List
from typing import Optional
from typing import Tuple

from sim_clock.core.barrier import Barrier
from sim_clock.core.gates import Gates
from sim_clock.core.waits import Timeout


@dataclass
class Late:
    """Who a frame stopped waiting for: participants by name, gated topics."""

    participants: List[str] = field(default_factory=list)
    topics: List[str] = field(default_factory=list)


@dataclass
class Hold:
    """The participants and the gates of one clock, and their one timeout."""

    barrier: Barrier
    gates: Gates
    timeout: Timeout

    @classmethod
    def with_timeout(cls, timeout_ns: int) -> 'Hold':
        """Return an empty hold whose holders wait ``timeout_ns`` unless they name their own."""
        timeout = Timeout(timeout_ns)
        return cls(Barrier(timeout=timeout), Gates(timeout=timeout), timeout)

    @property
    def settled(self) -> bool:
        """Whether the frames out are finished: no done and no gated output is awaited."""
        # The gates asked only if there are any: every frame with participants asks.
        return self.barrier.clear and not (self.gates.gates and self.gates.awaited)

    @property
    def holding(self) -> bool:
        """Whether the next frame is held: a done, a gated output or a writer is awaited."""
        return not self.barrier.clear or self.gates.holding

    def frames_until_awaited(self, time_ns: int, time_step_ns: int, limit: int) -> int:
        """Return how many frames after ``time_ns`` go out up to the next one that waits."""
        count = self.barrier.frames_until_due(time_ns, time_step_ns, limit)
        if not self.gates.gates:
            return count
        return self.gates.frames_until_gated(time_ns, time_step_ns, count)

    def published(self, before_ns: int, time_ns: int, now_ns: int, gated: bool) -> None:
        """Note the frames out after ``before_ns`` up to ``time_ns``: wait for their holders."""
        self.barrier.published(time_ns, now_ns)
        if gated:
            self.gates.published(before_ns, time_ns, now_ns)

    def overdue(self, now_ns: int) -> Tuple[Optional[Late], Optional[int]]:
        """
        Return who is late at ``now_ns`` (None: nobody), and when the next holder will be.

        The deadline: the earliest steady time at which a participant awaited and not late yet
        is, or at which a gate's wait changes (``Gates.deadline_ns``); None if neither comes. A
        wait asks both at once, of the participants in one pass.
        """
        names, deadline = self.barrier.overdue(now_ns)
        gates, topics = self.gates, []
        if gates.gates:  # asked only if there are any: every wait asks
            topics = gates.late(now_ns)
            gated = gates.deadline_ns()
            if gated is not None and (deadline is None or gated < deadline):
                deadline = gated
        return (Late(names, topics) if names or topics else None), deadline

    def count_again(self, now_ns: int) -> None:
        """Give every holder still awaited a new timeout from ``now_ns`` (a new step)."""
        self.barrier.count_again(now_ns)
        if self.gates.gates:
            self.gates.count_again(now_ns)

    def reset(self) -> None:
        """Time went back: nothing is awaited, and the next frame is due for everyone."""
        self.barrier.reset()
        self.gates.reset()
