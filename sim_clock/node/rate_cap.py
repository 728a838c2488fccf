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
The /clock rate cap on the node: a frame sink that lets out only the frames of the grid.

:class:`~sim_clock.core.clock_rate.ClockRateCap` chooses the frames; :class:`CappedSink`
wraps the server's sink, outside the clock views (so the views follow /clock), and applies
the cap in free run only: steps, sync mode, pause and real-time mode pass through. An idle
republish carries the last time that went out, never a frame that was left out (a timer due
before it would fire late), and never one older than that; a reset starts from its new time
(the core forgets the last time out: ``settings.Core.take_changes``).
"""

import time
from typing import Callable

from sim_clock.core.settings import Core


class CappedSink:
    """
    A frame sink that applies the core's rate cap to free run before ``sink`` publishes.

    ``now_ns``: the node's steady clock, as the engine's (the cap counts wall time by it).
    """

    def __init__(self, sink, core: Core, now_ns: Callable[[], int] = time.monotonic_ns):
        self._sink, self._core = sink, core
        self._now = now_ns
        self._timeline, self._cap = core.timeline, core.rate_cap
        #: What the sink it wraps leaves to do at the end of its frames (its own method).
        self.end_of_frames = sink.end_of_frames

    def _capping(self) -> bool:
        """Whether frames are capped now: a cap is set and simulation time free-runs."""
        return self._cap.active and self._timeline.frame_period_ns() is not None

    def limit(self, limit: int) -> int:
        """
        Return how many frames free run may advance now, up to ``limit`` (paced: held back).

        Never past the boundary of the sink it wraps (a bag's end).
        """
        limit = self._sink.limit(limit)
        if not self._capping():
            return limit
        return self._cap.limit(limit, self._timeline.frame, self._now())

    def publish_frames(self, frames) -> None:
        """
        Publish the frames, /clock only for those the cap lets out (all when not capping).

        Every frame goes to the sink it wraps, with the times whose /clock goes out: a sink
        with data (a bag's) publishes each frame's data all the same.
        """
        if not frames:
            return
        if not self._capping():
            self._sink.publish_frames(frames)
            self._cap.last_out_ns = frames[-1]
            return
        out = self._cap.select(frames, self._timeline.frame, self._now(),
                               keep_last=self._core.holds_frames())
        self._sink.publish_frames(frames, out)
        if out:
            self._cap.last_out_ns = out[-1]

    def publish_time(self, time_ns: int) -> None:
        """Publish ``time_ns`` again; in capped free run, the last time that went out."""
        cap = self._cap
        if self._capping() and cap.last_out_ns is not None:
            time_ns = cap.last_out_ns
        self._sink.publish_time(time_ns)
        cap.last_out_ns = time_ns

    def publishers(self) -> list:
        """Return the publishers of the sink it wraps."""
        return self._sink.publishers()

    def close(self) -> None:
        """Close the sink it wraps."""
        self._sink.close()
