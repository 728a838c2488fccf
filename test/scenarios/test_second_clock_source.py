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

"""A second /clock publisher is an alarm: logged once, in status and diagnostics, cleared."""

import time

from diagnostic_msgs.msg import DiagnosticArray
from diagnostic_msgs.msg import DiagnosticStatus
import pytest
import rclpy
from rosgraph_msgs.msg import Clock
from sim_clock.wire.names import CLOCK_QOS

pytestmark = pytest.mark.process

TIMEOUT = 15.0


def _wait_status(client, condition, what):
    """Ask ~/get_status until ``condition(status)``; fail after TIMEOUT."""
    deadline = time.monotonic() + TIMEOUT
    status = client.status()
    while not condition(status):
        assert time.monotonic() < deadline, f'timed out waiting for {what}: {status}'
        client.executor.spin_once(timeout_sec=0.2)
        status = client.status()
    return status


def test_a_second_clock_publisher_is_named_until_it_goes(start_server, client, domain_id):
    """Another node's /clock publisher: one ERROR line, status and diagnostics; then cleared."""
    server = start_server({'sync': True})
    reports = []
    client.node.create_subscription(DiagnosticArray, '/diagnostics', reports.append, 10)
    status = _wait_status(client, lambda s: True, 'the server')
    assert list(status.other_clock_sources) == []
    rogue = rclpy.create_node('rogue_clock', namespace='/sim', context=client.context)
    publisher = rogue.create_publisher(Clock, '/clock', CLOCK_QOS)
    try:
        status = _wait_status(client, lambda s: s.other_clock_sources, 'the alarm')
        assert list(status.other_clock_sources) == ['/sim/rogue_clock on /clock']
        start = len(reports)
        client.spin_until(
            lambda: any(s.level == DiagnosticStatus.ERROR and 'rogue_clock' in s.message
                        for r in reports[start:] for s in r.status), 'an ERROR report')
        # Seen again and again, logged once.
        _wait_status(client, lambda s: len(reports) > start + 1, 'another report')
        assert server.log().count('another clock source: /sim/rogue_clock on /clock') == 1
    finally:
        rogue.destroy_publisher(publisher)
        rogue.destroy_node()
    status = _wait_status(client, lambda s: not s.other_clock_sources, 'the alarm to clear')
    assert 'clock source gone: /sim/rogue_clock on /clock' in server.log()
