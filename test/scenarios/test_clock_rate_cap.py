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

"""max_clock_rate through DDS: the grid, the bound, timers on time, steps untouched."""

from bisect import bisect_left

import pytest
import rclpy
from rclpy.clock import ROSClock
from rclpy.executors import SingleThreadedExecutor
from rclpy.time import Time
from rclpy.time_source import TimeSource
from rosgraph_msgs.msg import Clock

pytestmark = pytest.mark.process

NS = 1_000_000_000
MS = 1_000_000


def _most_in_a_second(sources: list) -> int:
    """Return the most messages whose source timestamps fall within one second."""
    sources = sorted(sources)
    return max((bisect_left(sources, start + NS) - index
                for index, start in enumerate(sources)), default=0)


def _timer_firings(times: list, start_ns: int, period_s: float, domain_id: int) -> list:
    """
    Return when an rclpy timer on ROS time fires as /clock takes ``times``, in order.

    rclpy's own TimeSource, clock and timer, fed every message a reliable subscriber got (a
    use_sim_time node's best-effort depth-1 subscription may drop one under load, which is
    rclpy's, not the cap's). The timer is made at ``start_ns``.
    """
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain_id)
    node = rclpy.create_node('timer_under_cap', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    clock, source = ROSClock(), TimeSource()
    source.attach_clock(clock)
    source.ros_time_is_active = True

    def take(time_ns):
        source.clock_callback(Clock(clock=Time(nanoseconds=time_ns).to_msg()))
        for _ in range(3):
            executor.spin_once(timeout_sec=0)
    fired = []
    try:
        take(start_ns)
        node.create_timer(period_s, lambda: fired.append(clock.now().nanoseconds), clock=clock)
        for time_ns in times:
            take(time_ns)
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    return fired


def test_capped_free_run_publishes_every_grid_frame_and_timers_fire_on_time(
        start_server, client, domain_id):
    """
    At rtf 10, 1 ms frames (10^4 frames/s) under a 10 Hz cap: 1 frame in 1000 goes out.

    Every second of simulated time arrives, exactly, none between; at most the cap a wall
    second (source timestamps); an rclpy timer of 2 s fires at each deadline, as without it.
    """
    start_server({'time_step': 0.001, 'real_time_factor': 10.0, 'max_clock_rate': 10.0,
                  'paused': True})
    status = client.status_when_ready()
    assert (status.max_clock_rate, status.clock_stride) == (10.0, 1000)
    client.wait_for_clock(what='/clock matched before the step')
    assert client.step('', 1000).success  # while paused: never capped
    client.wait_for_time(NS)
    assert client.trigger('resume').success
    client.spin_until(lambda: client.distinct_times()[-1] >= 13 * NS, '13 simulated seconds')
    after_step = [t for t in client.distinct_times() if t > NS]
    assert after_step[:12] == [k * NS for k in range(2, 14)]
    # A timer made at 1 s (on the grid): deadlines 3, 5, 7, ... s, each one met exactly.
    fired = _timer_firings(after_step[:12], NS, 2.0, domain_id)
    assert fired == [(2 * k + 1) * NS for k in range(1, 7)]
    moving = [source for source, sim in zip(client.clock_sources, client.times()) if sim > NS]
    assert _most_in_a_second(moving) <= 10 + 2
    assert client.status().clock_stride == 1000


def test_full_speed_under_a_cap_stays_under_it_on_a_grid(start_server, client):
    """At rtf 0 under 200 Hz: every time out is a whole stride of frames; at most 200 + 20 a s."""
    start_server({'time_step': 0.001, 'real_time_factor': 0.0, 'max_clock_rate': 200.0})
    client.spin_until(lambda: len(client.clocks) >= 400, '2 s of capped /clock')
    status = client.status()
    assert status.clock_stride > 1 and status.frame > 10_000
    moving = [(source, sim) for source, sim in zip(client.clock_sources, client.times())
              if sim > 0]
    assert _most_in_a_second([source for source, _ in moving]) <= 200 + 20
    sims = [sim for _, sim in moving]
    assert sims == sorted(set(sims))  # no frame twice, none back
    # Once the stride is measured (a quarter second): a grid of 10 frames or more.
    settled = moving[0][0] + NS // 2
    assert all(sim % (10 * MS) == 0 for source, sim in moving if source > settled)


def test_steps_and_parameters_are_not_capped(start_server, client):
    """A cap leaves steps whole; it is set at run time; a bad one is refused, unchanged."""
    start_server({'sync': True, 'time_step': 0.001, 'max_clock_rate': 10.0})
    client.wait_for_clock(what='/clock matched before the step')
    response = client.step('', 1000)
    assert response.success and response.frame == 1000
    client.wait_for_time(NS)
    assert client.distinct_times_since_reset() == [k * MS for k in range(1001)]
    refused = client.set_parameter('max_clock_rate', -5.0)
    assert not refused.successful
    assert client.get_parameter('max_clock_rate') == 10.0
    assert client.set_parameter('max_clock_rate', 0.0).successful
    assert client.status().max_clock_rate == 0.0
    assert not client.set_parameter('max_clock_rate', 'fast').successful


def test_simclock_status_says_the_cap():
    """The publish line names the cap and the stride; without a cap it says nothing more."""
    from sim_clock.client.api import Status
    from sim_clock.client.cli_format import format_status
    capped = Status('simulation', False, False, 10, 10 * MS, 0, '', 0.0, MS, 100.0,
                    max_clock_rate=100.0, clock_stride=50)
    assert 'publish:   100 Hz idle; free run at most 100 Hz (1 frame in 50)' in format_status(
        capped)
    plain = Status('simulation', False, False, 10, 10 * MS, 0, '', 0.0, MS, 100.0)
    assert 'publish:   100 Hz' in format_status(plain).splitlines()
