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

"""Frames to bytes: the /clock publish function, without DDS."""

from types import SimpleNamespace

import pytest
from sim_clock.core.units import MAX_TIME_NS
from sim_clock.core.units import NS_PER_SEC
from sim_clock.node.publishing import clock_publisher

pytestmark = pytest.mark.fast

#: A bag-like clock offset: a wall-clock epoch time.
START_NS = 1_700_000_000 * NS_PER_SEC


@pytest.mark.parametrize('time_ns', [0, 1, NS_PER_SEC - 1, NS_PER_SEC, START_NS, MAX_TIME_NS])
@pytest.mark.parametrize('offset_ns', [0, 1, START_NS])
def test_clock_publisher_sends_what_rclpy_serializes(time_ns, offset_ns):
    """The raw /clock of each frame is byte for byte rclpy's serialization of the message."""
    from rclpy.serialization import serialize_message
    from rosgraph_msgs.msg import Clock
    time_ns = min(time_ns, MAX_TIME_NS - offset_ns)
    sent = []
    publisher = SimpleNamespace(handle=SimpleNamespace(publish_raw=sent.append))
    clock_publisher(publisher, offset_ns)(time_ns)
    msg = Clock()
    msg.clock.sec, msg.clock.nanosec = divmod(time_ns + offset_ns, NS_PER_SEC)
    assert sent == [serialize_message(msg)]
