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
``bag_player --follow-clock``'s windows, with a real node and writers that are doubles.

The follower holds each bag topic to a window of unacknowledged messages, as flow control
does (``sim_clock.node.flow_control``, ``test/node/test_flow_control.py``); its node is an
rclpy one, so this test has an rclpy context of its own.
"""

from bags import write_string_bag
from flow_doubles import KeepLast
from flow_doubles import SHORT_WAIT_NS
import pytest
from sim_clock.bag import follower as follower_module
from sim_clock.bag.follower import BagFollower
from sim_clock.bag.reader import Bag
from sim_clock.node.flow_control import window

pytestmark = pytest.mark.dds


def test_a_follower_waits_for_a_stalled_topic_at_every_window_too(
        monkeypatch, context, tmp_path):
    """``bag_player --follow-clock``: a /clock that releases a burst, a dead reader matched."""
    monkeypatch.setattr(follower_module, 'DATA_ACK_TIMEOUT_NS', SHORT_WAIT_NS)
    path = str(tmp_path / 'bag')
    write_string_bag(path, [(0, '/a', 'x')])
    bag = Bag(path)
    follower = BagFollower(bag, context=context)
    try:
        topic = KeepLast(depth=100, readers={'live': 10, 'dead': 0})
        topic.topic_name = '/a'
        follower._topic_publishers, follower._windows = [topic], [window(topic.qos_profile)]
        burst = 400
        follower._emit((None, [0] * burst, list(range(burst))), 0, burst)
    finally:
        follower.destroy_node()
        bag.close()
    # The last window is the frame's own wait's (which skips a stalled topic, as a step does).
    assert topic.taken['live'] == list(range(burst - 50)) and topic.lost['live'] == []
    assert topic.lost['dead'] == list(range(burst - 100))
