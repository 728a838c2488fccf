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

"""Writers that refuse where told, and a flow control over them: for tests without DDS."""

from types import SimpleNamespace

from rclpy.qos import QoSProfile
from sim_clock.node.acks import Acknowledgements
from sim_clock.node.flow import FlowControl


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


def make_flow(*writers, free_running=False, ok=True):
    """Return a FlowControl over ``writers`` on a node that has only what it uses, armed."""
    logger = Logger()
    node = SimpleNamespace(timeline=SimpleNamespace(free_running=free_running),
                           context=SimpleNamespace(ok=lambda: ok), get_logger=lambda: logger)
    node.acks = Acknowledgements()
    flow = FlowControl(node, list(writers))
    flow.start()
    return flow, logger
