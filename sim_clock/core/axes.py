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
The three time coordinates of a clock server, and the one place that converts between them.

- *Timeline time*: what :class:`~sim_clock.core.timeline.Timeline` counts (0 after a reset,
  or ``start_time``). Named ``time_ns`` or a bare ``<what>_ns`` in the core and the node.
- */clock time*: what ``/clock`` carries: timeline time plus the clock offset (a bag's first
  stamp, or 0 with ``--start-at-zero`` and for the clock server). Named ``clock_ns`` or
  ``clock_<what>_ns``. Participants, the barrier, statuses and answers speak /clock time.
- *Bag time*: a bag's timestamps: timeline time plus the bag's first stamp. Named
  ``bag_<what>_ns``; only ``sim_clock.bag`` uses it.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Axes:
    """Where timeline time 0 lies on /clock and in a bag, in ns."""

    #: /clock at timeline time 0.
    clock_offset_ns: int = 0
    #: The bag time at timeline time 0 (a bag's first stamp; 0 without a bag).
    bag_start_ns: int = 0

    def to_clock(self, time_ns: int) -> int:
        """Return the /clock time of timeline time ``time_ns``."""
        return self.clock_offset_ns + time_ns

    def from_clock(self, clock_ns: int) -> int:
        """Return the timeline time of /clock time ``clock_ns``."""
        return clock_ns - self.clock_offset_ns

    def to_bag(self, time_ns: int) -> int:
        """Return the bag time of timeline time ``time_ns``."""
        return self.bag_start_ns + time_ns

    def from_bag(self, bag_ns: int) -> int:
        """Return the timeline time of bag time ``bag_ns``."""
        return bag_ns - self.bag_start_ns
