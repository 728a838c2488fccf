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

"""start_time through DDS: where time starts and resets go; what a bag player refuses."""

import time

from bags import write_test_bag
from harness import executable
from harness import ServerProcess
from harness import stamp_ns
from harness import TestClient
import pytest

pytestmark = pytest.mark.process

NS = 1_000_000_000
MS = 1_000_000


def test_a_given_start_time_is_exact_and_every_reset_returns_to_it(start_server, client):
    """Decimal text exact to the ns; frames whole steps from it; a change waits for a reset."""
    start = 1_700_000_000 * NS + 123_456_789
    # Quoted: YAML text, exact; a bare number would be a double (about 240 ns apart here).
    start_server({'sync': True, 'time_step': 0.001, 'start_time': "'1700000000.123456789'"})
    client.wait_for_time(start)
    response = client.step('', 3)
    assert stamp_ns(response.clock) == start + 3 * MS
    client.wait_for_time(start + 3 * MS)
    assert client.distinct_times()[-4:] == [start + k * MS for k in range(4)]
    assert client.set_parameter('start_time', 12.5).successful
    assert stamp_ns(client.status().clock) == start + 3 * MS  # no jump until a reset
    client.trigger('reset')
    assert stamp_ns(client.status().clock) == 12_500_000_000
    refused = client.set_parameter('start_time', 'yesterday')
    assert not refused.successful and "'wall'" in refused.reason
    assert client.get_parameter('start_time') == 12.5  # unchanged by the refusal


def test_wall_start_time_starts_and_resets_at_the_wall_clock(start_server, client):
    """'wall': time starts at the wall clock, and every reset goes to the wall clock then."""
    before = time.time_ns()
    start_server({'sync': True, 'start_time': 'wall'})
    status = client.status_when_ready()
    assert before <= stamp_ns(status.clock) <= time.time_ns()
    before = time.time_ns()
    client.trigger('reset')
    after_reset = stamp_ns(client.status().clock)
    assert before <= after_reset <= time.time_ns()
    assert after_reset > stamp_ns(status.clock)


@pytest.mark.parametrize('name, at_start, later, ok, reason', [
    ('start_time', 'wall', 5.0, 0, "a bag player's time is the bag's: start_time must be 0"),
])
def test_a_bag_player_refuses_what_only_the_server_takes(
        start_server, domain_id, tmp_path, name, at_start, later, ok, reason):
    """A bag player's time is the bag's, every frame with its data: refused at start or later."""
    path = str(tmp_path / 'bag')
    write_test_bag(path)
    player = ServerProcess(domain_id, str(tmp_path), {name: at_start}, argv=[path],
                           executable=executable('bag_player'))
    assert player.process.wait(60) == 1
    assert player.stop() == 1
    assert reason in player.log()
    start_server({'sync': True}, argv=[path], executable=executable('bag_player'))
    client = TestClient(domain_id, name='bag_refusal_client')
    try:
        client.status_when_ready()
        refused = client.set_parameter(name, later)
        assert not refused.successful and f'{name} must be 0' in refused.reason
        assert client.set_parameter(name, ok).successful
    finally:
        client.close()
