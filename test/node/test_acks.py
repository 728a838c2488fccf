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

"""What held a step back for its readers: recorded by the waits, said in the step's answer."""

import time

from flow_doubles import Writer
import pytest
from sim_clock.node.acks import Acknowledgements
from sim_clock.node.acks import describe_waits

pytestmark = pytest.mark.fast

MS = 1_000_000


class SlowWriter(Writer):
    """A writer whose readers acknowledge everything once ``acked_after`` waits have passed."""

    def __init__(self, topic, acked_after):
        super().__init__()
        self.topic_name, self.waits = topic, acked_after

    def wait_for_all_acked(self, timeout):
        if self.waits <= 0:
            return True
        self.waits -= 1
        time.sleep(timeout.nanoseconds / 1e9)  # what rclpy's wait does while readers lag
        return False


def test_waits_are_counted_per_topic_and_taken_once():
    acks = Acknowledgements()
    slow, quick = SlowWriter('/slow', acked_after=3), SlowWriter('/quick', acked_after=0)
    assert acks.wait_now([slow, quick], timeout_ns=1_000 * MS) == []
    waited, stalled = acks.take_waits()
    assert set(waited) == {'/slow', '/quick'}
    assert waited['/slow'] >= 3 * 2 * MS  # three slices of 2 ms before it acknowledged
    assert waited['/quick'] < waited['/slow']
    assert stalled == []
    assert acks.take_waits() == ({}, [])


def test_readers_that_never_acknowledge_are_named_as_stalled():
    acks = Acknowledgements()
    dead = SlowWriter('/dead', acked_after=10**9)
    assert acks.wait_now([dead], timeout_ns=10 * MS) == ['/dead']
    waited, stalled = acks.take_waits()
    assert stalled == ['/dead'] and waited['/dead'] >= 10 * MS


def test_the_answer_names_long_waits_slowest_first_and_stalled_readers():
    assert describe_waits({}, []) == ''
    assert describe_waits({'/a': 50 * MS}, []) == ''  # too short to mention
    text = describe_waits({'/b': 1_000 * MS, '/a': 2_000 * MS, '/c': 1 * MS}, ['/d'])
    assert text == ('; paced by its readers: waited 3.001 s for the acknowledgements of '
                    '/a (2.000 s), /b (1.000 s); readers of /d stalled (no acknowledgement in '
                    'time): they may have lost samples')
