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
Nothing crosses between graphs: tests, the pytest fixture and benchmarks keep off a ROS graph.

A ROS graph that a person or another tool started on this host holds no claim of ours; its
DDS participants show on the transport, and the domain allocator skips what they are on.
"""

import os
import shutil
import subprocess
import sys

from harness import ChildProcess
from harness import ROOT
from harness import ServerProcess
from harness import TestClient
import pytest
from sim_clock.client.domains import check_free
from sim_clock.client.domains import claim
from sim_clock.client.domains import DomainIds
from sim_clock.client.domains import DomainInUse
from sim_clock.client.domains import DOMAINS
from sim_clock.client.domains import domains_in_use
from sim_clock.client.domains import HELD

pytestmark = pytest.mark.process

#: A plain rclpy node, nothing of sim_clock: what a graph started by anything else holds.
PLAIN_NODE = """
import sys
import rclpy
rclpy.init()
node = rclpy.create_node('someone_elses_node')
print('ready', flush=True)
sys.stdin.readline()
node.destroy_node()
rclpy.shutdown()
"""

#: A user's conftest: the allocator's draw lands first on the domain given (a launched
#: server's), as a random draw may, and its claims are on ports of their own, so that this
#: test's claim on that domain is not seen: only the transport shows the server there, as it
#: alone shows a graph that a person or another tool started.
UNLUCKY_DRAW = """
from sim_clock.client import domains
from sim_clock.client import lockstep_harness
lockstep_harness.DOMAINS = domains.DomainIds(first={domain}, port_base={port_base})
"""


def _own_claim_ports():
    """Return a claim port base no concurrent run uses (runs share CLAIM_PORT_BASE)."""
    def free(port_base):
        claimers = [claim(domain, port_base) for domain in range(1, 101)]
        for claimer in claimers:
            if claimer is not None:
                claimer.close()
        return None not in claimers
    return next(base for base in range(30_000, 32_000, 100) if free(base))


def test_domain_ids_claimed_by_another_run_are_skipped():
    """
    Two allocators (two test runs on one host) never hand out the same DDS domain.

    On claim ports of their own and with no DDS participant seen anywhere, so that the claims
    alone decide: a run beside this one took an id between this test's look and its take, once.
    """
    port_base = _own_claim_ports()
    base = 40

    def nothing_in_use():
        return {}
    other_run = claim(base + 2, port_base)  # held by another process: skipped by both
    first, second = (DomainIds(first=base, port_base=port_base, in_use=nothing_in_use)
                     for _ in range(2))
    taken = [first.take(), second.take(), first.take(), second.take()]
    assert taken == [base, base + 1, base + 3, base + 4], taken
    other_run.close()
    # An allocator lets its oldest claims go: it keeps HELD of them.
    for _ in range(HELD):
        first.take()
    assert DomainIds(first=base, port_base=port_base, in_use=nothing_in_use).take() == base


def test_domains_a_ros_graph_is_on_are_never_handed_out(domain_id, tmp_path):
    """
    A plain rclpy node on one domain, a clock server on another: the allocator skips both.

    Their processes hold no claim; what shows them is the transport. With every other id of
    its range taken, the allocator says which ids are in use, by what, and how to choose one.
    """
    plain, served, free = domain_id, DOMAINS.take(), DOMAINS.take()
    node = ChildProcess(plain, PLAIN_NODE, str(tmp_path))
    server = ServerProcess(served, str(tmp_path))
    watcher = TestClient(served, name='isolation_watcher', subscribe_clock=False)
    try:
        node.expect('ready')
        watcher.status_when_ready()
        in_use = domains_in_use()
        assert plain in in_use and served in in_use, in_use
        assert any('UDP port' in seen for seen in in_use[plain]), in_use[plain]
        ids = DomainIds(first=plain, ids=[plain, served, free], port_base=_own_claim_ports())
        assert ids.take() == free
        with pytest.raises(DomainInUse) as refused:
            ids.take()
        message = str(refused.value)
        # The ids in use are said in their order: which of the two comes first depends on the
        # ids this run was given.
        first, second = sorted((plain, served))
        for expected in (f'DDS participants are on {first} (UDP port', f', {second} (UDP port',
                         f'other test runs claim {free}', '--sim-clock-domain-id'):
            assert expected in message, message
        with pytest.raises(DomainInUse, match=f'DDS domain {plain} is in use on this host'):
            check_free(plain)
        check_free(free)
    finally:
        watcher.close()
        node.send('')
        assert node.finish() == 0
        assert server.stop() == 0


def _fixture_run(tmp_path, *options, domain=None):
    shutil.copy(os.path.join(ROOT, 'examples', 'test_lockstep_example.py'), tmp_path)
    if domain is not None:
        (tmp_path / 'conftest.py').write_text(
            UNLUCKY_DRAW.format(domain=domain, port_base=_own_claim_ports()))
    return subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', *options,
         'test_lockstep_example.py'],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)


def test_the_fixture_beside_a_running_simulation_leaves_its_clock_alone(domain_id, tmp_path):
    """
    A user's lockstep tests run while their simulation runs: its frame, epoch and holder stay.

    The simulation: a clock server in sync mode held by its own driver, stepped 5 frames. The
    fixture's draw lands on that domain first, and is moved on; asked for that domain by name
    (``--sim-clock-domain-id``), the fixture refuses it and says why.
    """
    server = ServerProcess(domain_id, str(tmp_path))
    driver = TestClient(domain_id, name='simulation_driver', subscribe_clock=False)
    try:
        driver.status_when_ready()
        assert driver.sync_mode_cmd('simulation', start=True).result
        assert driver.step('simulation', 5).success
        before = driver.status()
        drawn_dir = tmp_path / 'drawn'
        drawn_dir.mkdir()
        drawn = _fixture_run(drawn_dir, domain=domain_id)
        assert drawn.returncode == 0, drawn.stdout + drawn.stderr
        assert '2 passed' in drawn.stdout
        named_dir = tmp_path / 'named'
        named_dir.mkdir()
        named = _fixture_run(named_dir, f'--sim-clock-domain-id={domain_id}')
        assert named.returncode == 1, named.stdout + named.stderr
        assert f'sim_clock fixture: DDS domain {domain_id} is in use on this host' in (
            named.stdout), named.stdout
        after = driver.status()
        assert (after.frame, after.epoch, after.owner) == (
            before.frame, before.epoch, before.owner) == (5, before.epoch, 'simulation')
    finally:
        driver.close()
        assert server.stop() == 0
