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
from sim_clock.node import flow_control as flow_module
from sim_clock.node.acks import Acknowledgements
from sim_clock.node.flow_control import FlowControl

#: The stall wait for writers that never acknowledge (``Writer(acked=False)``), in ns: each
#: wait for them lasts its whole timeout, in real time, so a test cuts WAIT_TIMEOUT_NS to this.
SHORT_WAIT_NS = 20_000_000


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


class KeepLast(Writer):
    """
    A KEEP_LAST writer of ``depth`` samples and its matched reliable readers, in one process.

    ``readers``: name -> how many samples that reader takes each time the writer waits for its
    acknowledgements (0: a dead or frozen one, which takes none and stays matched). A reader
    takes samples only then, the slowest a live one can be: a sample it has not taken when
    ``depth`` newer ones are out is overwritten, lost to it (:attr:`lost`). :meth:`leave`
    unmatches a reader, as the end of a dead process's lease does.
    """

    def __init__(self, depth, readers):
        super().__init__()
        self.qos_profile = QoSProfile(depth=depth)
        self.rates = dict(readers)
        #: reader -> the samples it took, and those it lost, in order.
        self.taken = {reader: [] for reader in self.rates}
        self.lost = {reader: [] for reader in self.rates}

    def publish(self, time_ns):
        super().publish(time_ns)
        oldest = len(self.sent) - self.qos_profile.depth  # the first sample still held
        for reader in self.rates:
            self.lost[reader].extend(self.sent[self._next(reader):max(oldest, 0)])

    def _next(self, reader):
        """Return the index of the next sample ``reader`` takes or loses."""
        return len(self.taken[reader]) + len(self.lost[reader])

    def wait_for_all_acked(self, timeout):
        for reader, rate in self.rates.items():
            start = self._next(reader)
            self.taken[reader].extend(self.sent[start:start + rate])
        return all(self._next(reader) == len(self.sent) for reader in self.rates)

    def get_subscription_count(self):
        return len(self.rates)

    def leave(self, reader):
        """Unmatch ``reader``: what it lacks is no longer waited for."""
        del self.rates[reader]


class Logger:
    """Keeps the warnings."""

    def __init__(self):
        self.warnings = []

    def warning(self, text, **kwargs):
        self.warnings.append(text)


def short_waits(monkeypatch) -> None:
    """Make flow control give stalled readers SHORT_WAIT_NS instead of WAIT_TIMEOUT_NS."""
    monkeypatch.setattr(flow_module, 'WAIT_TIMEOUT_NS', SHORT_WAIT_NS)


def make_owner(free_running=False, ok=True, acks=None, timeline=None):
    """
    Return a node's FlowControl, with only what it uses, and its logger.

    ``acks``: the node's Acknowledgements (None: new ones); ``timeline``: what says whether
    time free-runs (None: one that says ``free_running``); ``ok``: whether the context runs.
    """
    logger = Logger()
    flow = FlowControl(timeline or SimpleNamespace(free_running=free_running,
                                                   frame_period_ns=lambda: None),
                       acks or Acknowledgements(), logger, lambda: ok)
    return flow, logger


def make_flow(*writers, free_running=False, ok=True, acks=None):
    """Return the budgets of ``writers``, the one group of a node's FlowControl, armed."""
    owner, logger = make_owner(free_running=free_running, ok=ok, acks=acks)
    flow = owner.writers(list(writers))
    flow.start()
    return flow, logger
