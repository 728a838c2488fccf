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

"""Parameter changes in the log of the clock server and of the bag player, and refusals."""

from bags import write_test_bag
from harness import executable
import pytest

pytestmark = pytest.mark.process

SYNC = {'sync': True, 'time_step': 0.01}


@pytest.fixture
def bag_player(start_server, client, tmp_path):
    """Start a bag player in sync mode on a one-second bag; return it."""
    path = str(tmp_path / 'bag')
    write_test_bag(path, 'sqlite3')
    player = start_server(SYNC, argv=[path], executable=executable('bag_player'))
    client.status_when_ready()
    return player


def test_parameter_changes_are_logged_with_old_and_new_values(start_server, client):
    """Each change at INFO (name, old -> new, what it does); a refusal with its reason."""
    server = start_server()
    client.status_when_ready()
    assert client.set_parameter('real_time_factor', 2.5).successful
    client.spin_until(lambda: 'parameter real_time_factor: 1.0 -> 2.5: free run goes at 2.5x '
                              'wall pace' in server.log(), 'the change in the log')
    assert not client.set_parameter('real_time_factor', -1.0).successful  # rclpy's range
    assert not client.set_parameter('time_step', 0.0).successful  # rclpy's range
    assert not client.set_parameter('mode', 'fast').successful  # our check
    client.spin_until(lambda: "parameter change refused: mode: 'simulation' -> 'fast': mode "
                              'must be one of' in server.log(), 'the refusal in the log')
    log = server.log()
    assert '[WARN]' in log and 'parameter change refused: real_time_factor: 2.5 -> -1.0: ' in log
    assert 'parameter change refused: time_step: 0.01 -> 0.0: ' in log, log
    assert client.set_parameter('mode', 'real_time').successful
    client.spin_until(lambda: "parameter mode: 'simulation' -> 'real_time': time follows the "
                              'wall clock (a reset)' in server.log(), 'the mode change in the log')
    # A parameter that a service call changed is logged as a set is, saying so, once.
    client.trigger('pause')
    client.spin_until(lambda: 'parameter paused: False -> True (by a service call): time '
                              'stands still' in server.log(), 'the pause in the log')
    assert client.get_parameter('paused') is True
    assert 'time paused at' in server.log()
    # A client that takes sync mode with frames of another length changes time_step.
    assert client.sync_mode_cmd('driver', start=True, time_step_ms=20).result
    client.spin_until(lambda: 'parameter time_step: 0.01 -> 0.02 (by a service call): frames '
                              'are 20000000 ns long' in server.log(), 'the time_step change')
    log = server.log()
    assert log.count('parameter paused: False -> True') == 1, log
    assert log.count("parameter mode: 'simulation' -> 'real_time'") == 1, log
    assert "parameter mode: 'real_time' -> 'simulation' (by a service call)" in log, log


def test_bag_player_logs_its_own_parameters(bag_player, client):
    """The bag player's loop and its refusals of clock-server values go to its log too."""
    assert client.set_parameter('loop', True).successful
    assert not client.set_parameter('start_time', '5').successful
    client.spin_until(lambda: 'parameter loop: False -> True: At the end of the bag, start '
                              'again from its beginning' in bag_player.log()
                      and "parameter change refused: start_time: '0' -> '5': a bag player's "
                          "time is the bag's" in bag_player.log(),
                      'the loop change and the refusal in the log')
