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
own, holds sync mode and yields a :class:`sim_clock.client.lockstep_harness.LockstepHarness`.
The marker's keyword arguments are clock server parameters, but for ``domain_id`` and
``timeout_sec`` (the seconds any wait of the harness may take). Nothing here
imports rclpy until a test asks for the fixture.

The domain is one that no DDS participant of this host is on and no other test run claimed
(:mod:`sim_clock.client.domains`), so a test never steps or resets the clock of a simulation
running beside it. ``ROS_DOMAIN_ID`` in the environment is not taken: a shell that exported it
for the simulation it runs is the case this guards against. A domain asked for explicitly, with
``@pytest.mark.sim_clock(domain_id=N)`` or ``pytest --sim-clock-domain-id N``, is used, and the
test fails with the reason if a ROS graph of this host is on it.
"""

import pytest


def pytest_addoption(parser):
    """Add --sim-clock-domain-id: the DDS domain of every sim_clock fixture of the run."""
    parser.addoption(
        '--sim-clock-domain-id', type=int, default=None, metavar='N',
        help='DDS domain of the sim_clock fixture (default: one no ROS graph of this host is '
             'on); refused if a DDS participant of this host is on it')


def pytest_configure(config):
    """Declare the sim_clock marker."""
    config.addinivalue_line(
        'markers',
        'sim_clock(domain_id=None, timeout_sec=10.0, **parameters): clock server parameters '
        'for the sim_clock fixture (time_step in seconds, ...), its DDS domain if one must be '
        'chosen, and the seconds any of its waits may take')


@pytest.fixture
def sim_clock(request, tmp_path):
    """Yield a LockstepHarness: a clock server in sync mode held by the test."""
    from sim_clock.client.domains import DomainInUse
    from sim_clock.client.lockstep_harness import LockstepHarness
    marker = request.node.get_closest_marker('sim_clock')
    parameters = dict(marker.kwargs) if marker is not None else {}
    domain_id = parameters.pop('domain_id', None)
    if domain_id is None:
        domain_id = request.config.getoption('--sim-clock-domain-id', default=None)
    try:
        harness = LockstepHarness(domain_id=domain_id, log_dir=str(tmp_path), **parameters)
    except DomainInUse as in_use:
        pytest.fail(f'sim_clock fixture: {in_use}', pytrace=False)
    with harness:
        yield harness
