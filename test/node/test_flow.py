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
A publish the writer refuses, without DDS: published again, or the rest dropped, never fatal.

The writer's refusal itself (Fast DDS 3 with a slow reader that keeps all) is produced through
DDS in ``test/system/test_clock_views.py``; here the refusals are placed exactly.
"""

from types import SimpleNamespace

import pytest
from rclpy.qos import QoSProfile
from sim_clock.node.flow import FlowControl
from sim_clock.node.flow import MAX_WINDOW
from sim_clock.node.flow import PublisherDestroyed


class Writer:
    """A writer that refuses its publish attempts numbered in ``refuse`` (from 0)."""

    def __init__(self, refuse=(), acked=True):
        self.qos_profile = QoSProfile(depth=10_000)
        self.topic_name = '/clock'
        self.sent, self.refuse, self.acked, self.attempts = [], set(refuse), acked, 0

    def publish(self, time_ns):
        self.attempts += 1
        if self.attempts - 1 in self.refuse:
            raise RuntimeError('cannot publish data')
        self.sent.append(time_ns)

    def wait_for_all_acked(self, timeout):
        return self.acked

    def get_subscription_count(self):
        return 1


class Logger:
    """Keeps the warnings."""

    def __init__(self):
        self.warnings = []

    def warning(self, text, **kwargs):
        self.warnings.append(text)


def _flow(writer, free_running=False, ok=True):
    logger = Logger()
    node = SimpleNamespace(timeline=SimpleNamespace(free_running=free_running),
                           context=SimpleNamespace(ok=lambda: ok), get_logger=lambda: logger)
    flow = FlowControl(node, [writer])
    flow.start()
    return flow, logger


@pytest.mark.parametrize('free_running', [False, True], ids=['stepped', 'free-run'])
def test_a_refused_sample_is_published_again_once_the_readers_caught_up(free_running):
    writer = Writer(refuse={700})
    flow, logger = _flow(writer, free_running)
    flow.publish(0, writer.publish, range(2000))
    assert writer.sent == list(range(2000))  # nothing lost, nothing twice, in order
    assert logger.warnings == []
    # Stepped: four windows of 500, the refused one counted by what it really sent.
    assert flow.budgets[0] == (-1 if free_running else 0)
    assert 2000 % MAX_WINDOW == 0


def test_readers_that_do_not_catch_up_cost_the_rest_of_the_run_on_that_topic():
    writer = Writer(refuse={300}, acked=False)
    flow, logger = _flow(writer)
    flow.publish(0, writer.publish, range(2000))
    assert writer.sent == list(range(300))
    assert 'stalled reliable readers of: /clock' in logger.warnings[0]  # the first window
    assert '/clock refused a sample (cannot publish data)' in logger.warnings[1]
    assert '1700 frames not published on it' in logger.warnings[1]


def test_a_sample_refused_again_right_after_the_wait_is_dropped_with_the_rest():
    writer = Writer(refuse={10, 11})  # the first try, and the try after the wait
    flow, logger = _flow(writer)
    flow.publish(0, writer.publish, range(100))
    assert writer.sent == list(range(10))
    assert '90 frames not published' in logger.warnings[0]


def test_a_destroyed_publisher_or_a_shut_down_context_still_raises():
    def destroyed(time_ns):
        raise PublisherDestroyed('gone')
    flow, _ = _flow(Writer())
    with pytest.raises(PublisherDestroyed):
        flow.publish(0, destroyed, range(3))
    writer = Writer(refuse={1})
    flow, _ = _flow(writer, ok=False)
    with pytest.raises(RuntimeError, match='cannot publish data'):
        flow.publish(0, writer.publish, range(3))
