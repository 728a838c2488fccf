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
A lockstep test of a node with a use_sim_time timer, frame by frame, with the sim_clock fixture.

The fixture comes with sim_clock (a pytest plugin): no conftest needed. Run it with
    pytest examples/test_lockstep_example.py
"""

import pytest


class Blinker:
    """The node under test: toggles a light every 50 ms of simulated time."""

    def __init__(self, node):
        self.node = node
        self.on = False
        self.toggles = []  # simulated times of each toggle, ns
        node.create_timer(0.05, self._toggle)

    def _toggle(self):
        self.on = not self.on
        self.toggles.append(self.node.get_clock().now().nanoseconds)


@pytest.mark.sim_clock(time_step=0.01)
def test_blinker_toggles_every_fifth_frame(sim_clock):
    """With 10 ms frames, the 50 ms timer fires on frames 5, 10, 15... and never between."""
    blinker = Blinker(sim_clock.create_node('blinker'))
    sim_clock.step()  # the first frame starts the node's time
    started = len(blinker.toggles)
    for frame in range(2, 31):
        result = sim_clock.step()
        assert result.frame == frame
    # 29 more frames of 10 ms: the timer fired once per 50 ms of simulated time.
    fired = blinker.toggles[started:]
    assert len(fired) == 6
    assert all(later - earlier == 50_000_000 for earlier, later in zip(fired, fired[1:]))


@pytest.mark.sim_clock(time_step=0.001)
def test_nothing_happens_between_steps(sim_clock):
    """Without a step, simulated time stands still, however long the test waits."""
    blinker = Blinker(sim_clock.create_node('blinker'))
    for _ in range(200):
        sim_clock.step()
    count = len(blinker.toggles)
    assert count >= 3
    # Wall time goes by while the server answers status calls; simulated time does not.
    for _ in range(50):
        assert sim_clock.client.status().frame == 200
    sim_clock.spin_until(lambda: True)
    assert len(blinker.toggles) == count
