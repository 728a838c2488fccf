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
The one policy for a refused sample (``FlowControl.retry``), without DDS.

/clock and the views (``FlowControl.publish``) and the bag player's run
(``sim_clock.bag.flow_controlled_run.paced``, ``test/bag/test_flow_controlled_run.py``) ask
it the same question: publish the refused sample again, or give up on that writer for the rest
of the run of frames.
"""

from flow_doubles import make_flow
from flow_doubles import short_waits
from flow_doubles import Writer
import pytest
from rclpy.executors import ExternalShutdownException

pytestmark = pytest.mark.fast


class CountedWriter(Writer):
    """A writer that counts the waits for its readers' acknowledgements."""

    def __init__(self, acked=True):
        super().__init__(acked=acked)
        self.waits = 0

    def wait_for_all_acked(self, timeout):
        self.waits += 1
        return self.acked


def test_a_sample_refused_first_is_published_again_once_its_readers_caught_up():
    writer = CountedWriter()
    flow, _ = make_flow(writer)
    assert flow.retry(RuntimeError('cannot publish data'), 0, 7, None)
    assert writer.waits == 1
    assert flow.retry(RuntimeError('cannot publish data'), 0, 9, 7)  # another sample


def test_the_sample_refused_last_is_given_up_at_once_without_a_wait():
    writer = CountedWriter()
    flow, _ = make_flow(writer)
    assert not flow.retry(RuntimeError('cannot publish data'), 0, 7, 7)
    assert not flow.retry(RuntimeError('cannot publish data'), 0, (0, 2, 3), (0, 2, 3))
    assert writer.waits == 0


def test_readers_that_do_not_catch_up_in_time_make_the_writer_give_up(monkeypatch):
    short_waits(monkeypatch)
    flow, _ = make_flow(CountedWriter(acked=False))
    assert not flow.retry(RuntimeError('cannot publish data'), 0, 7, None)


def test_a_refusal_in_a_shut_down_context_ends_as_a_shutdown():
    """rclpy.spin's callers end on ExternalShutdownException; the refusal is its cause."""
    flow, _ = make_flow(CountedWriter(), ok=False)
    error = RuntimeError('cannot publish data')
    with pytest.raises(ExternalShutdownException) as raised:
        flow.retry(error, 0, 7, None)
    assert raised.value.__cause__ is error


def test_giving_up_says_which_topic_refused_what_and_what_it_costs():
    flow, logger = make_flow(Writer(), Writer())
    flow.gave_up(-1, RuntimeError('cannot publish data'), '3 frames not published on it')
    assert logger.warnings == [
        '/clock refused a sample (cannot publish data) and its readers did not catch up '
        'within 5 s: 3 frames not published on it']


def test_a_new_sample_refused_first_in_a_window_after_a_retry_is_published_again():
    """
    Refused at 700, published again; refused again at 1000, the first of the next window.

    1000 is another sample, with 300 published since the last refusal: its readers get their
    wait, as a bag's message would, and nothing is lost.
    """
    writer = Writer(refuse={700, 1001})  # attempts: 1001 is time 1000 (700 was tried twice)
    flow, logger = make_flow(writer)
    flow.publish(0, writer.publish, range(2000))
    assert writer.sent == list(range(2000))
    assert logger.warnings == []
