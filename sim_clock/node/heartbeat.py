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
How often the server's /clock writer asks its readers for acknowledgements.

The executables' Fast DDS profile gives every writer a heartbeat of 1 ms: while a sample is
unacknowledged, the writer asks each reliable reader for an acknowledgement every millisecond,
which is what makes an acknowledged step or a flow-control window wait about a millisecond
(doc/design.md, "Acknowledged steps"). Readers on Fast DDS's defaults answer 5 ms after they
are asked, so a /clock writer that publishes a frame every few milliseconds is never all
acknowledged and asks every reader every millisecond: a wake-up of each participant's process
a millisecond, which at 16 participant processes cost a fifth of the frames of free run and at
64 two fifths (doc/performance.md, "How each figure grows").

While participants are joined and no step waits for acknowledgements (``ack_timeout`` 0), the
participants' dones say that each frame arrived, and frames held for them never come fast
enough to fill a flow-control window (500 frames) within :data:`HELD_NS`: the /clock writer
asks every :data:`HELD_NS` then, every :data:`ASKING_NS` otherwise. The period is set on the
live writer (``sim_clock._writer_times``); a change takes effect at the writer's next
heartbeat, so the first acknowledgement after a change to 1 ms can take up to
:data:`HELD_NS`. Only where the process runs on our profile: a profiles file of the user's
keeps its own periods.
"""

from typing import Callable
from typing import Optional

from sim_clock.process.fastdds_profiles import profile_is_ours

#: The heartbeat period of the executables' profile: while anything may wait for
#: acknowledgements of /clock.
ASKING_NS = 1_000_000
#: The heartbeat period while participants hold the frames and nothing waits for
#: acknowledgements of /clock.
HELD_NS = 20_000_000


def heartbeat_setter(publisher) -> Optional[Callable[[int], None]]:
    """
    Return what sets ``publisher``'s heartbeat period (ns), or None where it is not ours to set.

    None on another middleware than Fast DDS, under a profiles file of the user's, or where
    the extension was not built.
    """
    if not profile_is_ours():
        return None
    try:
        from sim_clock import _writer_times
    except ImportError:
        return None
    pointer = publisher.handle.pointer
    return lambda period_ns: _writer_times.set_heartbeat_period(pointer, period_ns)


class ClockHeartbeat:
    """
    The /clock writer's heartbeat period, following the participants and ``ack_timeout``.

    :param set_period: sets the writer's period (:func:`heartbeat_setter`); None: nothing is
        set (the rule is still followed, for :attr:`period_ns`).
    :param participants: how many participants are joined.
    :param ack_timeout_ns: the ``ack_timeout`` of steps now (0: none waits).
    """

    def __init__(self, set_period: Optional[Callable[[int], None]],
                 participants: Callable[[], int], ack_timeout_ns: Callable[[], int]):
        self._set_period = set_period
        self._participants = participants
        self._ack_timeout_ns = ack_timeout_ns
        #: The period the writer has (the profile's until a change).
        self.period_ns = ASKING_NS

    def wanted_ns(self) -> int:
        """Return the period the rule gives now."""
        return HELD_NS if self._participants() and not self._ack_timeout_ns() else ASKING_NS

    def follow(self, *_) -> None:
        """Set the writer's period to the rule's, if it changed (after a join, a leave, a set)."""
        wanted = self.wanted_ns()
        if wanted == self.period_ns:
            return
        self.period_ns = wanted
        if self._set_period is not None:
            self._set_period(wanted)
