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
The ``sim_clock`` pytest fixture, registered with pytest when sim_clock is installed.

    @pytest.mark.sim_clock(time_step=0.01)
    def test_my_node(sim_clock):
        node = sim_clock.create_node('my_node')
        sim_clock.step(10)
        ...

The fixture starts a clock server in sync mode as a separate process, on a DDS domain of its
own, holds sync mode and yields a :class:`sim_clock.client.testing.LockstepHarness`. The marker's
keyword arguments are clock server parameters. Nothing here imports rclpy until a test asks for
the fixture.
"""

import pytest


def pytest_configure(config):
    """Declare the sim_clock marker."""
    config.addinivalue_line(
        'markers',
        'sim_clock(**parameters): clock server parameters for the sim_clock fixture '
        '(time_step in seconds, ...)')


@pytest.fixture
def sim_clock(request, tmp_path):
    """Yield a LockstepHarness: a clock server in sync mode held by the test."""
    from sim_clock.client.testing import LockstepHarness
    marker = request.node.get_closest_marker('sim_clock')
    parameters = dict(marker.kwargs) if marker is not None else {}
    with LockstepHarness(log_dir=str(tmp_path), **parameters) as harness:
        yield harness
