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
The clock server's tick: a steady timer whose period fits the timeline's state.

Real time and paced free run publish from the timer; full-speed free run from the spin loop,
which then blocks on the executor only while a frame is held. Each frame out is noted for
pacing (the idle republish) and for the node's own ROS clock, which with ``use_sim_time``
follows the frames the node publishes: the server never waits on its own clock.
"""

import time
from typing import Callable
from typing import Optional

from rosgraph_msgs.msg import Clock as ClockMsg
from sim_clock.core.axes import Axes
from sim_clock.core.clock_rate import ClockRateCap
from sim_clock.core.pacing import FULL_SPEED_TICK_NS
from sim_clock.core.pacing import Pacing
from sim_clock.core.timeline import Timeline
from sim_clock.core.units import NS_PER_SEC
from sim_clock.core.units import split_ns
from sim_clock.node.runtime import SIGNAL_LATENCY_S

#: Full speed, frames held for participants or gates: the longest a spin round blocks.
WAIT_TICK_S = FULL_SPEED_TICK_NS / NS_PER_SEC


class Ticker:
    """
    The tick of one clock server: its timer, its period, and each frame out noted.

    ``create_timer(period_s, callback)``: makes the node's steady timer (rclpy's ``Timer``: its
    ``timer_period_ns`` settable, ``reset``); ``time_source``: the node's own time source (None
    without one). One timer for the node's life: a new period is set on it.
    """

    def __init__(self, timeline: Timeline, pacing: Pacing, rate_cap: ClockRateCap, axes: Axes,
                 create_timer: Callable, time_source=None,
                 now_ns: Callable[[], int] = time.monotonic_ns):
        self._timeline = timeline
        self._pacing = pacing
        self._rate_cap = rate_cap
        self._axes = axes
        self._create_timer = create_timer
        self._time_source = time_source
        self._now = now_ns
        self._own_time_msg = ClockMsg()
        self._tick: Optional[Callable[[], None]] = None
        self._timer = None
        #: The period of the tick timer, in ns.
        self.period_ns: Optional[int] = None
        #: Whether time free-runs as fast as possible (real_time_factor 0).
        self.full_speed = False
        self._driven = False
        #: While frames are held at full speed: the steady time of the next tick of the loop.
        self._held_tick_ns = 0

    def start(self, tick: Callable[[], None]) -> None:
        """Call ``tick`` from now on: from the timer, and at full speed from the spin loop."""
        self._tick = tick
        self.retime()

    def after_changes(self, changes: list) -> None:
        """After every dispatch of changes of the timeline (maybe none): :meth:`retime`."""
        self.retime()

    def retime(self) -> None:
        """Make the timer's period fit the current state."""
        if self._tick is None:
            return
        timeline = self._timeline
        period = timeline.frame_period_ns()
        self._rate_cap.pace(timeline.time_step_ns, timeline.real_time_factor)
        self.full_speed = period == 0
        tick_ns = self._pacing.tick_period_ns(period, self._driven)
        if tick_ns == self.period_ns:
            return
        self.period_ns = tick_ns
        if self._timer is None:
            self._timer = self._create_timer(tick_ns / NS_PER_SEC, self._tick)
            return
        # The period changed in place, counted from now: a timer made again at each pause,
        # resume or change of pace is added to the executor again, and rclpy's EventsExecutor
        # warns at each add once a clock has 8 timers (a bag player has).
        self._timer.timer_period_ns = tick_ns
        self._timer.reset()

    def drive_full_speed(self) -> None:
        """Leave full-speed free run to the caller's loop, which calls :meth:`spin_once`."""
        self._driven = True
        self.retime()

    def spin_once(self, executor, holding: Callable[[], bool]) -> None:
        """One round of the spin loop: an event, and at full speed a batch of frames."""
        if not self._driven:
            self.drive_full_speed()
        if self.full_speed:
            if holding():
                # Frames held for participants or gates go on from the callback that ends the
                # wait (a done, an output): block until it comes, a tick at most, instead of
                # polling a core away from the participants. The tick looks for late holders
                # and republishes; it runs once a tick has passed, not after every done.
                executor.spin_once(timeout_sec=WAIT_TICK_S)
                now = self._now()
                if now < self._held_tick_ns:
                    return
                self._held_tick_ns = now + FULL_SPEED_TICK_NS
            else:
                executor.spin_once(timeout_sec=0)
            self._tick()
        else:
            executor.spin_once(timeout_sec=SIGNAL_LATENCY_S)

    def published(self) -> None:
        """Note that /clock went out: pacing, and the node's own ROS clock (use_sim_time)."""
        self._pacing.last_publish_ns = self._now()
        time_source = self._time_source
        if time_source is not None and time_source.ros_time_is_active:
            stamp = self._own_time_msg.clock
            stamp.sec, stamp.nanosec = split_ns(self._axes.to_clock(self._timeline.time_ns))
            time_source.clock_callback(self._own_time_msg)
