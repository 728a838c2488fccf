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
Ticker: the tick's period for each state, its timers, and each frame out noted.

The time core, the pacing, the rate cap and rclpy's time source are the real ones; the node's
timers are ours (they record). Time advances only by the steady clock of the test.
"""

from fractions import Fraction

from harness import soak
from node_doubles import MS
from node_doubles import SECOND
import pytest
from rclpy.clock import ROSClock
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.time_source import TimeSource
from sim_clock.core.axes import Axes
from sim_clock.core.clock_rate import ClockRateCap
from sim_clock.core.pacing import FULL_SPEED_TICK_NS
from sim_clock.core.pacing import MIN_TICK_NS
from sim_clock.core.pacing import Pacing
from sim_clock.core.rules import Mode
from sim_clock.core.timeline import Timeline
from sim_clock.node.server import ClockServer
from sim_clock.node.ticking import Ticker

pytestmark = pytest.mark.dds

#: The idle republish period: publish_rate 10 Hz.
REPUBLISH_NS = 100 * MS
OFFSET_NS = 7 * SECOND


class Timer:
    """A steady timer of the node, as rclpy's: its period (settable) and callback; resets."""

    def __init__(self, period_s: float, callback):
        self.timer_period_ns = round(period_s * SECOND)
        self.callback = callback
        self.resets = 0

    def reset(self):
        """Count a reset: the period counts from now."""
        self.resets += 1


class Rig:
    """A ticker over a real timeline, with timers that record."""

    def __init__(self, time_source=None, max_rate=0, **options):
        self.now = 0
        self.timeline = Timeline(lambda: self.now, **options)
        self.pacing = Pacing(REPUBLISH_NS)
        self.rate_cap = ClockRateCap(Fraction(max_rate))
        self.timers = []
        self.ticks = 0
        self.ticker = Ticker(self.timeline, self.pacing, self.rate_cap,
                             Axes(clock_offset_ns=OFFSET_NS), self._create, time_source,
                             lambda: self.now)

    def _create(self, period_s, callback):
        timer = Timer(period_s, callback)
        self.timers.append(timer)
        return timer

    def tick(self):
        """Count a tick."""
        self.ticks += 1

    def period_ns(self) -> int:
        """Return the period of the one timer, ns."""
        [timer] = self.timers
        assert timer.callback == self.tick
        return timer.timer_period_ns


@pytest.mark.parametrize('options, period_ns', [
    ({'sync': True}, REPUBLISH_NS),
    ({'mode': Mode.REAL_TIME}, REPUBLISH_NS),
    ({'paused': True}, REPUBLISH_NS),
    ({'time_step_ns': 10 * MS}, 10 * MS),
    ({'time_step_ns': 10 * MS, 'real_time_factor': Fraction(2)}, 5 * MS),
    ({'time_step_ns': 10 * MS, 'real_time_factor': Fraction(1, 2)}, 20 * MS),
    ({'time_step_ns': MS // 10}, MIN_TICK_NS),
    ({'time_step_ns': SECOND}, REPUBLISH_NS),
    ({'real_time_factor': Fraction(0)}, FULL_SPEED_TICK_NS),
], ids=['sync', 'real-time', 'paused', 'free-run', 'twice-as-fast', 'half-pace',
        'tiny-frames', 'long-frames', 'full-speed'])
def test_the_tick_period_fits_the_state(options, period_ns):
    """One timer calls the tick: a frame's wall time within [1 ms, republish], else republish."""
    rig = Rig(**options)
    rig.ticker.start(rig.tick)
    assert rig.period_ns() == period_ns
    assert rig.ticker.period_ns == period_ns
    assert rig.ticker.full_speed == (options.get('real_time_factor') == 0)
    rig.timers[0].callback()
    assert rig.ticks == 1


def test_no_timer_before_start():
    """Retiming does nothing until the ticker has a tick to call."""
    rig = Rig()
    rig.ticker.retime()
    assert rig.timers == [] and rig.ticker.period_ns is None


def test_one_timer_whose_period_follows_the_state():
    """
    The timer is made once; a new period is set on it and counted from now (a reset).

    The same period leaves it alone. Ten thousand pauses and resumes at twice the wall pace
    (a new period each) still leave one timer.
    """
    rig = Rig(time_step_ns=10 * MS)
    rig.ticker.start(rig.tick)
    [timer] = rig.timers
    rig.ticker.retime()
    rig.timeline.set_time_step_ns(10 * MS)
    rig.ticker.retime()
    assert timer.resets == 0 and rig.period_ns() == 10 * MS
    rig.timeline.set_real_time_factor(Fraction(2))
    rig.ticker.retime()
    assert rig.period_ns() == 5 * MS and timer.resets == 1
    rig.timeline.set_sync(True)
    rig.ticker.retime()
    assert rig.period_ns() == REPUBLISH_NS and timer.resets == 2
    rig.timeline.set_time_step_ns(20 * MS)      # sync: no free-run period, no change
    rig.ticker.retime()
    assert timer.resets == 2
    rig.timeline.set_sync(False)
    rig.ticker.retime()
    assert rig.period_ns() == 10 * MS and timer.resets == 3
    for _ in range(10_000):
        rig.timeline.set_paused(True)
        rig.ticker.retime()
        rig.timeline.set_paused(False)
        rig.ticker.retime()
    assert rig.timers == [timer] and timer.resets == 3 + 20_000


def test_full_speed_driven_by_the_spin_loop_ticks_at_the_republish_period():
    """drive_full_speed: the spin loop publishes the batches; the timer only republishes."""
    rig = Rig(real_time_factor=Fraction(0))
    rig.ticker.start(rig.tick)
    assert rig.period_ns() == FULL_SPEED_TICK_NS
    rig.ticker.drive_full_speed()
    assert rig.period_ns() == REPUBLISH_NS and rig.ticker.full_speed
    rig.timeline.set_real_time_factor(Fraction(1))
    rig.ticker.retime()
    assert rig.period_ns() == 10 * MS and not rig.ticker.full_speed


def test_retime_paces_the_rate_cap():
    """The cap's stride follows free run's pace: 1000 frames a second under 100 Hz: 1 in 10."""
    rig = Rig(max_rate=100, time_step_ns=MS)
    rig.ticker.start(rig.tick)
    assert rig.rate_cap.stride == 10
    rig.timeline.set_real_time_factor(Fraction(1, 10))
    rig.ticker.retime()
    assert rig.rate_cap.stride == 1


def test_a_frame_out_defers_the_idle_republish():
    """
    published() notes the publish: no republish is due until about a period later.

    The period counts by the clock the ticker is given (the node's steady clock).
    """
    rig = Rig(sync=True)
    rig.ticker.start(rig.tick)
    rig.now = 5 * REPUBLISH_NS
    rig.ticker.published()
    assert not rig.pacing.republish_due(rig.now, REPUBLISH_NS)
    assert rig.pacing.republish_due(rig.now + REPUBLISH_NS, REPUBLISH_NS)


def test_a_frame_out_sets_the_own_ros_clock_with_sim_time():
    """With use_sim_time the node's ROS clock reads the /clock time of each frame out."""
    source, clock = TimeSource(), ROSClock()
    source.attach_clock(clock)
    source.ros_time_is_active = True
    rig = Rig(source, sync=True, time_step_ns=10 * MS)
    rig.ticker.start(rig.tick)
    rig.timeline.step('', 3)
    rig.ticker.published()
    assert clock.now().nanoseconds == OFFSET_NS + 30 * MS
    rig.timeline.step('', 1)
    rig.ticker.published()
    assert clock.now().nanoseconds == OFFSET_NS + 40 * MS


def test_without_sim_time_the_own_clock_is_left_alone():
    """A time source not on ROS time is not fed: the node's clock stays the system's."""
    source, clock = TimeSource(), ROSClock()
    source.attach_clock(clock)
    rig = Rig(source, sync=True)
    rig.ticker.start(rig.tick)
    rig.timeline.step('', 3)
    rig.ticker.published()
    source.ros_time_is_active = True
    assert clock.now().nanoseconds == 0     # no time was ever set on it


def test_spin_once_ticks_at_full_speed_only(context):
    """A spin round ticks once at full speed (driving it from then on), never when paced."""
    executor = SingleThreadedExecutor(context=context)
    try:
        paced = Rig(time_step_ns=10 * MS)
        paced.ticker.start(paced.tick)
        paced.ticker.spin_once(executor, lambda: False)
        assert paced.ticks == 0
        fast = Rig(real_time_factor=Fraction(0))
        fast.ticker.start(fast.tick)
        fast.ticker.spin_once(executor, lambda: True)
        fast.ticker.spin_once(executor, lambda: False)
        assert fast.ticks == 2 and fast.period_ns() == REPUBLISH_NS
    finally:
        executor.shutdown()


def test_held_frames_tick_once_a_tick_not_after_every_event(context):
    """
    At full speed, while frames are held, the loop ticks once per FULL_SPEED_TICK_NS.

    A done that ends the wait sends the next frame from its own callback: the tick only looks
    for late holders and republishes. Not held, every round ticks (the next batch).
    """
    executor = SingleThreadedExecutor(context=context)
    try:
        rig = Rig(real_time_factor=Fraction(0))
        rig.ticker.start(rig.tick)
        for _ in range(3):
            rig.ticker.spin_once(executor, lambda: True)
        assert rig.ticks == 1
        rig.now += FULL_SPEED_TICK_NS - 1
        rig.ticker.spin_once(executor, lambda: True)
        assert rig.ticks == 1
        rig.now += 1
        rig.ticker.spin_once(executor, lambda: True)
        assert rig.ticks == 2
        for _ in range(3):
            rig.ticker.spin_once(executor, lambda: False)
        assert rig.ticks == 5
    finally:
        executor.shutdown()


#: Cycles of pause, resume, sync on and sync off: 10^4 in a soak (scripts/soak.sh).
CYCLES = soak(1_000, 10_000)


@pytest.mark.soak
def test_a_server_keeps_its_timers_through_pauses_and_mode_changes(context):
    """
    A real clock server at twice the wall pace: pause, resume, sync on, sync off, CYCLES times.

    Each gives the tick a new period, on the same timer; its timers are as many after the
    cycles as before (10^4 of them in the soak). rclpy's EventsExecutor warned at every pause
    and resume of a bag player (8 timers on its steady clock) while the tick timer was made
    again each time.
    """
    server = ClockServer(context=context, parameter_overrides=[
        Parameter('real_time_factor', value=2.0), Parameter('time_step', value=0.01)])
    try:
        timers, tick = list(server.timers), server.ticker._timer
        periods = set()
        for _ in range(CYCLES):
            server.control.pause()
            periods.add(server.ticker.period_ns)
            server.control.resume()
            periods.add(server.ticker.period_ns)
            server.control.set_sync(True)  # a reset, each
            server.control.set_sync(False)
        assert len(periods) == 2, periods  # the period did change, each time
        assert list(server.timers) == timers and server.ticker._timer is tick
    finally:
        server.destroy_node()
