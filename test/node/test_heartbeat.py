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
The /clock writer's heartbeat rule (``sim_clock.node.heartbeat``), without DDS.

1 ms while anything may wait for acknowledgements of /clock; 20 ms while participants hold
the frames and ``ack_timeout`` is 0. Set only on a change, and only on our profile.
"""

import pytest
from sim_clock.node.heartbeat import ASKING_NS
from sim_clock.node.heartbeat import ClockHeartbeat
from sim_clock.node.heartbeat import HELD_NS
from sim_clock.process.fastdds_profiles import LOOPBACK_PROFILE_FILES
from sim_clock.process.fastdds_profiles import PROFILE_FILES
from sim_clock.process.fastdds_profiles import profile_is_ours

pytestmark = pytest.mark.fast


class Server:
    """What the rule reads of a server: its participants and ack_timeout; what it set."""

    def __init__(self):
        self.participants = 0
        self.ack_timeout_ns = 0
        self.set = []

    def heartbeat(self, settable: bool = True) -> ClockHeartbeat:
        return ClockHeartbeat(self.set.append if settable else None,
                              lambda: self.participants, lambda: self.ack_timeout_ns)


def test_the_period_follows_the_participants_and_ack_timeout_and_is_set_on_changes_only():
    server = Server()
    heartbeat = server.heartbeat()
    heartbeat.follow()
    assert heartbeat.period_ns == ASKING_NS and server.set == []  # the profile's already
    server.participants = 1
    heartbeat.follow()
    heartbeat.follow()
    assert server.set == [HELD_NS]
    server.participants = 3
    heartbeat.follow()
    assert server.set == [HELD_NS]
    server.ack_timeout_ns = 500_000_000  # a step may wait for acknowledgements again
    heartbeat.follow()
    assert server.set == [HELD_NS, ASKING_NS]
    server.ack_timeout_ns = 0
    heartbeat.follow()
    server.participants = 0
    heartbeat.follow()
    assert server.set == [HELD_NS, ASKING_NS, HELD_NS, ASKING_NS]
    assert heartbeat.period_ns == ASKING_NS


def test_without_a_setter_the_rule_is_followed_and_nothing_is_set():
    server = Server()
    heartbeat = server.heartbeat(settable=False)
    server.participants = 2
    heartbeat.follow()
    assert heartbeat.period_ns == HELD_NS == heartbeat.wanted_ns()


@pytest.mark.parametrize('environ, ours', [
    ({'FASTRTPS_DEFAULT_PROFILES_FILE': PROFILE_FILES[2]}, True),
    ({'FASTDDS_DEFAULT_PROFILES_FILE': PROFILE_FILES[3]}, True),
    ({'FASTRTPS_DEFAULT_PROFILES_FILE': LOOPBACK_PROFILE_FILES[2]}, True),
    ({}, False),  # Fast DDS's defaults: a heartbeat of 3 s, not ours to change
    ({'FASTRTPS_DEFAULT_PROFILES_FILE': '/etc/their_profile.xml'}, False),
    ({'FASTRTPS_DEFAULT_PROFILES_FILE': PROFILE_FILES[2],
      'RMW_IMPLEMENTATION': 'rmw_cyclonedds_cpp'}, False),
])
def test_the_period_is_ours_to_change_only_on_our_profile(environ, ours):
    assert profile_is_ours(environ) is ours
