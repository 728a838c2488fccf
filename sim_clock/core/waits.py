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
A frame's wait for one holder, a participant's done or a gated output: the one record of both.

A frame out is awaited from a holder (:meth:`Awaited.await_frame`) until the holder answers
(:meth:`Awaited.answered`: the slowest answer kept) or is late: its wait has counted a timeout
(a new step counts again, :meth:`Awaited.count_again`). The timeout of every holder that names
none is one setting, ``participant_timeout`` (:class:`Timeout`), shared by the participants
and the gates.
"""

from dataclasses import dataclass
from typing import Optional

from sim_clock.core.units import NS_PER_SEC


#: How long a frame waits by default (``participant_timeout``'s default), in steady ns.
DEFAULT_TIMEOUT_NS = 10 * NS_PER_SEC


@dataclass
class Timeout:
    """How long a frame waits for a holder that names no timeout of its own, steady ns."""

    ns: int = DEFAULT_TIMEOUT_NS


@dataclass(kw_only=True)
class Awaited:
    """What a frame waits for from one holder; /clock times in ns, waits in steady ns."""

    #: While a frame waits for it: the frame's /clock time (None: nothing awaited).
    awaited_ns: Optional[int] = None
    #: When that frame went out, and since when its wait counts towards the timeout.
    awaited_since_ns: int = 0
    counted_since_ns: int = 0
    #: The slowest answer so far.
    slowest_ns: int = 0

    @property
    def waited_for(self) -> bool:
        """Whether a frame waits for it now."""
        return self.awaited_ns is not None

    def await_frame(self, time_ns: int, now_ns: int) -> None:
        """Wait for it from ``now_ns`` for the frame at ``time_ns``."""
        self.awaited_ns = time_ns
        self.awaited_since_ns = self.counted_since_ns = now_ns

    def answered(self, now_ns: int) -> Optional[int]:
        """Note its answer at ``now_ns``; return the /clock time of the frame it released."""
        self.slowest_ns = max(self.slowest_ns, now_ns - self.awaited_since_ns)
        time_ns, self.awaited_ns = self.awaited_ns, None
        return time_ns

    def late(self, now_ns: int, timeout_ns: int) -> bool:
        """Whether it has been awaited for at least ``timeout_ns`` at ``now_ns``."""
        return self.awaited_ns is not None and now_ns - self.counted_since_ns >= timeout_ns

    def deadline_ns(self, timeout_ns: int) -> Optional[int]:
        """Return when it is late if still awaited, or None."""
        return None if self.awaited_ns is None else self.counted_since_ns + timeout_ns

    def count_again(self, now_ns: int) -> None:
        """Count its wait from ``now_ns`` (a new step), if awaited."""
        if self.awaited_ns is not None:
            self.counted_since_ns = now_ns
