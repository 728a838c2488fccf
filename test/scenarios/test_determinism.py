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
Byte-identical runs: bag player, a node under test as participant, recorder; twice.

``benchmarks/determinism.py`` runs it 20 times and without the participant (the README's
figures); here two runs, each in processes of their own, through real DDS.
"""

import importlib.util
import os

from harness import ROOT
import pytest
from rclpy.serialization import deserialize_message
from sim_clock.client.domains import DOMAINS
from std_msgs.msg import String

pytestmark = pytest.mark.process

MS = 1_000_000


def _determinism():
    spec = importlib.util.spec_from_file_location(
        'determinism', os.path.join(ROOT, 'benchmarks', 'determinism.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def expected_results(end_ns: int) -> list:
    """
    Return what the node must publish, tick by tick: the inputs stamped in each 50 ms.

    /clock starts at zero at the bag's first message (/a at 3 ms): /a comes at every 10 ms, on
    the ticks too, and /b every 33 ms from 4 ms (once on a tick, at 700 ms).
    """
    a = [(10 * MS * i, 0.5 * i) for i in range(250)]
    b = [(4 * MS + 33 * MS * i, 1.0 / (i + 1)) for i in range(76)]
    results = []
    for t in range(50 * MS, end_ns + 1, 50 * MS):
        after = t - 50 * MS if t > 50 * MS else -1  # the first tick has the message at 0 too
        a_values = [value for stamp, value in a if after < stamp <= t]
        b_values = [value for stamp, value in b if after < stamp <= t]
        last_b = repr(b_values[-1]) if b_values else '-'
        results.append((t, f't={t} a={len(a_values)}:{sum(a_values)!r} '
                           f'b={len(b_values)}:{last_b}'))
    return results


@pytest.mark.slow
def test_two_runs_with_the_participant_record_identical_bags(tmp_path, domain_id):
    """Same messages, bytes, timestamps and order; each result holds exactly its inputs."""
    determinism = _determinism()
    runs = []
    for index, domain in enumerate((domain_id, DOMAINS.take())):
        workdir = tmp_path / f'run{index}'
        workdir.mkdir()
        runs.append(determinism.run_once(str(workdir), domain, participant=True))
    first, second = runs
    assert first == second
    assert {topic for topic, _, _ in first} == {'/fused'}
    recorded = [(stamp, deserialize_message(data, String).data) for _, stamp, data in first]
    assert recorded == expected_results(determinism.END_NS)
