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
The bag player's services by rosbag2's names, through a real player process and its readers.

toggle_paused, is_paused, get_rate, set_rate, play_next, burst and stop.
"""

from bags import MS
from bags import START_NS
from harness import executable
from harness import stamp_ns
import pytest
from sim_clock.srv import Burst
from sim_clock.srv import GetRate
from sim_clock.srv import IsPaused
from sim_clock.srv import SetRate
from std_srvs.srv import Trigger
from test_bag_player import _by_topic
from test_bag_player import bag_client  # noqa: F401 (a fixture)
from test_bag_player import sqlite_bag  # noqa: F401 (a fixture)
from test_bag_progress import TerminalPlayer

pytestmark = pytest.mark.process


def _start_player(start_server, bag: str, params: dict):
    return start_server(params, argv=[bag], executable=executable('bag_player'))


def test_pause_toggles_and_the_rate(start_server, bag_client, sqlite_bag):  # noqa: F811
    """toggle_paused flips paused, is_paused says it; set_rate sets real_time_factor."""
    path, _ = sqlite_bag
    _start_player(start_server, path, {'paused': True, 'stay_at_end': True})
    bag_client.client_for(Trigger, 'toggle_paused')
    bag_client.status_when_ready()
    assert bag_client.call_idempotent(IsPaused, 'is_paused').paused is True
    for paused in (False, True):
        answer = bag_client.call(Trigger, 'toggle_paused')
        assert answer.success, answer.message
        assert bag_client.call_idempotent(IsPaused, 'is_paused').paused is paused
        assert bag_client.status().paused is paused
    assert bag_client.call_idempotent(GetRate, 'get_rate').rate == 1.0
    answer = bag_client.call_idempotent(SetRate, 'set_rate', SetRate.Request(rate=2.5))
    assert answer.success, answer.message
    assert bag_client.call_idempotent(GetRate, 'get_rate').rate == 2.5
    assert bag_client.get_parameter('real_time_factor') == 2.5
    for bad, says in ((0.0, 'more than 0'), (-1.0, 'more than 0'), (1e12, 'real_time_factor')):
        answer = bag_client.call_idempotent(SetRate, 'set_rate', SetRate.Request(rate=bad))
        assert not answer.success and says in answer.message, (bad, answer.message)
    assert bag_client.call_idempotent(GetRate, 'get_rate').rate == 2.5


def test_play_next_and_burst_play_the_next_frames(
        start_server, bag_client, sqlite_bag):  # noqa: F811
    """Paused: play_next plays the frame of the next message; burst N frames of N messages."""
    path, records = sqlite_bag
    _start_player(start_server, path, {'paused': True, 'time_step': 0.01, 'stay_at_end': True})
    bag_client.client_for(Trigger, 'play_next')
    bag_client.client_for(Burst, 'burst')
    bag_client.wait_matched(['/chatter', '/pose'])
    answer = bag_client.call(Trigger, 'play_next')
    assert answer.success, answer.message
    # /chatter 0 at the start and /pose 0 at 5 ms: both go with the first frame, at 10 ms.
    bag_client.wait_data(2)
    assert stamp_ns(bag_client.status().clock) == START_NS + 10 * MS
    assert bag_client.call(Trigger, 'play_next').success  # /pose 1 at 35 ms: the frame at 40
    bag_client.wait_data(3)
    assert stamp_ns(bag_client.status().clock) == START_NS + 40 * MS
    burst = bag_client.call(Burst, 'burst', Burst.Request(num_messages=5))
    assert burst.success and burst.actually_burst >= 5, burst
    played = 3 + burst.actually_burst
    bag_client.wait_data(played)
    first = sorted(records, key=lambda record: record.time_ns)[:played]
    assert _by_topic(bag_client.data) == _by_topic([(r.topic, r.key) for r in first])
    rest = bag_client.call(Burst, 'burst', Burst.Request(num_messages=0))
    assert rest.success and played + rest.actually_burst == len(records), rest
    bag_client.wait_data(len(records))
    refused = bag_client.call(Trigger, 'play_next')
    assert not refused.success and 'no message left' in refused.message, refused.message
    assert len(bag_client.data) == len(records)


def test_playing_refuses_play_next_and_stop_ends_the_player(
        start_server, bag_client, sqlite_bag):  # noqa: F811
    """While time advances by itself play_next and burst are refused; stop ends the player."""
    path, _ = sqlite_bag
    player = _start_player(start_server, path, {'real_time_factor': 0.05})
    bag_client.client_for(Trigger, 'stop')
    bag_client.status_when_ready()
    for name, srv_type in (('play_next', Trigger), ('burst', Burst)):
        refused = bag_client.call_idempotent(srv_type, name)
        assert not refused.success and refused.message.startswith('playing'), refused.message
    assert bag_client.call(Trigger, 'stop').success
    assert player.process.wait(timeout=30) == 0, player.log()
    assert 'Traceback' not in player.log()


def test_keys_on_the_users_terminal(client, domain_id, sqlite_bag):  # noqa: F811
    """Space pauses and resumes, the up arrow makes the rate 10 % faster, on a real terminal."""
    path, _ = sqlite_bag
    player = TerminalPlayer(domain_id, [path, '--no-progress'],
                            {'real_time_factor': 0.05, 'stay_at_end': True}, keys=True)
    try:
        player.read_until(lambda out: 'keyboard controls:' in out, 'the keys said at start')
        client.status_when_ready()
        player.press(b' ')
        player.read_until(lambda out: 'space: ' in out, "the space's answer")
        assert client.status().paused
        player.press(b'\x1b[A')
        player.read_until(lambda out: 'up arrow: ' in out, "the up arrow's answer")
        assert client.get_parameter('real_time_factor') == 0.05 * 1.1
        player.press(b' ')
        client.spin_until(lambda: not client.status().paused, 'the second space to resume')
    finally:
        code = player.stop()
    assert code == 0, player.output


def test_no_keys_with_disable_keyboard_controls(client, domain_id, sqlite_bag):  # noqa: F811
    """
    --disable-keyboard-controls: the terminal is left as it was, and no keys are offered.

    Left as it was, the terminal echoes what is typed (the keys mode turns echo off): the space
    typed comes back, and time stays paused.
    """
    path, _ = sqlite_bag
    player = TerminalPlayer(domain_id, [path, '--no-progress', '--disable-keyboard-controls'],
                            {'paused': True, 'stay_at_end': True}, keys=True)
    try:
        client.status_when_ready()
        player.read_until(lambda out: 'publishing /clock' in out, 'the start line')
        player.press(b'z ')
        player.read_until(lambda out: 'z ' in out, 'the echo of what was typed')
        assert client.status().paused
    finally:
        code = player.stop()
    assert code == 0, player.output
    assert 'keyboard controls' not in player.output and 'space:' not in player.output
