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
A bag's run under flow control, without DDS: refusals placed exactly on its topics and /clock.

rcl's refusal in C is in ``test/bag/test_replay.py``; /clock and the views alone in
``test/node/test_flow_control.py``, with the same writers (``test/flow_doubles.py``).
"""

from flow_doubles import KeepLast
from flow_doubles import make_flow as _flow
from flow_doubles import make_owner
from flow_doubles import short_waits
from flow_doubles import Writer
import pytest
from rclpy.executors import ExternalShutdownException
from sim_clock.bag.cursor import Cursor
from sim_clock.bag.flow_controlled_run import paced
from sim_clock.bag.replay import DROPPED
from sim_clock.bag.replay import PublishRefused
from sim_clock.bag.replay import python_run
from sim_clock.bag.replay import refused
from sim_clock.node.acks import Acknowledgements
from sim_clock.node.flow_control import MAX_WINDOW

pytestmark = pytest.mark.fast


class Topics:
    """
    The bag player's run over a topic writer and /clock, whose publishes refuse as numbered.

    ``refuse``: the publish attempts (from 0, messages and /clock counted together) that are
    refused, as ``sim_clock._replay`` refuses them.
    """

    def __init__(self, refuse=(), acked=True, ok=True):
        self.writer, self.clock = Writer(acked=acked), Writer(acked=acked)
        self.writer.topic_name = '/a'
        self.sent, self.refuse, self.attempts = [], set(refuse), 0
        self.flow, self.logger = _flow(self.writer, self.clock, ok=ok)
        self.run = paced(
            self.flow, python_run(self._emit, self._frame_done, self.flow.budgets))

    def _attempt(self):
        self.attempts += 1
        return self.attempts - 1 not in self.refuse

    def _emit(self, batch, start, stop):
        for index in range(start, stop):
            if not self._attempt():
                raise refused('cannot publish data', batch[1][index], 0, index)
            self.sent.append(batch[2][index])

    def _frame_done(self, time_ns):
        if not self._attempt():
            raise RuntimeError('cannot publish data')
        self.sent.append(('clock', time_ns))

    def play(self, times, frames):
        """Play one batch of messages at ``times`` (all on /a) over ``frames``."""
        batch = (times, [0] * len(times), [f'm{k}' for k in range(len(times))])
        Cursor(lambda start: iter([batch]), 0).play(frames, 0, self.run)


def _expected(times, frames, left_out=()):
    out = []
    for t in frames:
        out += [f'm{k}' for k, when in enumerate(times)
                if t - 10 < when <= t and k not in left_out]
        out.append(('clock', t))
    return out


@pytest.mark.parametrize('refuse', [{3}, {1}, {0, 5}], ids=['message', 'clock', 'both'])
def test_a_bag_sample_refused_is_played_again_once_its_readers_caught_up(refuse):
    """Message or /clock: the run goes on from the refused one; nothing lost, nothing twice."""
    topics = Topics(refuse=refuse)
    times = [0, 10, 10, 20, 30]
    topics.play(times, range(0, 40, 10))
    assert topics.sent == _expected(times, range(0, 40, 10))
    assert topics.logger.warnings == []
    assert list(topics.flow.budgets) == [MAX_WINDOW - 5, MAX_WINDOW - 4]  # each sent once


def test_a_live_reader_of_a_bag_topic_beside_a_dead_one_gets_every_message(monkeypatch):
    """
    A burst on a topic of depth 100 (windows of 50) while a dead reader of it is matched.

    Each window waits for the topic all the same, so the live reader, which takes messages
    only while the run waits, gets every one; the dead one loses what fell out of the history.
    """
    short_waits(monkeypatch)
    topic, clock = KeepLast(depth=100, readers={'live': 10, 'dead': 0}), Writer()
    topic.topic_name = '/a'
    flow, logger = _flow(topic, clock)

    def emit(batch, start, stop):
        for index in range(start, stop):
            topic.publish(batch[2][index])
    run = paced(flow, python_run(emit, clock.publish, flow.budgets))
    burst = 400
    Cursor(lambda start: iter([([0] * burst, [0] * burst, list(range(burst)))]), 0).play(
        range(0, 10, 10), 0, run)
    flow.refill()  # what the next run of frames waits for first
    assert topic.taken['live'] == list(range(burst)) and topic.lost['live'] == []
    assert topic.lost['dead'] == list(range(burst - 100)) and clock.sent == [0]
    assert len(logger.warnings) == burst // 50  # a wait after each window, each stalled


def test_a_bag_topic_whose_readers_do_not_catch_up_is_left_out_until_the_next_frames(
        monkeypatch):
    """Its messages play (time goes on) without being published; /clock is published."""
    short_waits(monkeypatch)
    topics = Topics(refuse={3}, acked=False)
    times = [0, 10, 10, 20, 30, 40]
    topics.play(times[:5], range(0, 40, 10))
    assert topics.sent == _expected(times, range(0, 40, 10), left_out={2, 3, 4})
    assert '/a refused a sample (cannot publish data)' in topics.logger.warnings[-1]
    assert 'publishes nothing more in these frames' in topics.logger.warnings[-1]
    assert topics.flow.budgets[0] == DROPPED
    # The next run of frames publishes on /a again.
    topics.flow.start()
    topics.sent[:] = []
    Cursor(lambda start: iter([((40,), (0,), ('m5',))]), 40).play(range(40, 50, 10), 0,
                                                                  topics.run)
    assert topics.sent == ['m5', ('clock', 40)]


def test_a_bag_sample_refused_again_right_after_the_wait_leaves_its_topic_out():
    topics = Topics(refuse={3, 4})  # the first try, and the try after the wait
    times = [0, 10, 10, 20]
    topics.play(times, range(0, 30, 10))
    assert topics.sent == _expected(times, range(0, 30, 10), left_out={2, 3})
    assert '/a refused a sample' in topics.logger.warnings[0]


def test_a_bag_refusal_in_a_shut_down_context_still_raises():
    """As rclpy.spin's callers expect a shut-down context: ExternalShutdownException."""
    topics = Topics(refuse={1}, ok=False)
    with pytest.raises(ExternalShutdownException, match='context was shut down') as raised:
        topics.play([0, 10], range(0, 20, 10))
    refusal = raised.value.__cause__
    assert isinstance(refusal, PublishRefused) and 'cannot publish data' in str(refusal)
    assert (refusal.which, refusal.done, refusal.index) == (-1, 0, 1)
    assert topics.flow.budgets[-1] == MAX_WINDOW  # the refused /clock is not spent


def test_a_bag_run_waits_once_for_its_writers_and_the_spent_views():
    """
    The bag's topics, /clock and the views are groups of the node's one FlowControl.

    The bag's run, stopped on its spent budgets, waits for the views that spent their window
    too: they then publish theirs without a wait of their own.
    """
    waits = []
    owner, logger = make_owner(acks=Acknowledgements(
        on_wait=lambda topics, *rest: waits.append(sorted(topics))))
    topic, clock, view = Writer(), Writer(), Writer()
    topic.topic_name, view.topic_name = '/a', '/v/clock'
    bag_flow, views_flow = owner.writers([topic, clock]), owner.writers([view])
    bag_flow.start()
    views_flow.start()
    views_flow.budgets[0] = 0  # spent by the views' last window

    def emit(batch, start, stop):
        for index in range(start, stop):
            topic.publish(batch[2][index])
    run = paced(bag_flow, python_run(emit, clock.publish, bag_flow.budgets))
    batch = ([0, 10], [0, 0], ['m0', 'm1'])
    Cursor(lambda start: iter([batch]), 0).play(range(0, 20, 10), 0, run)
    views_flow.publish(0, view.publish, range(0, 20, 10))
    assert (topic.sent, clock.sent, view.sent) == (['m0', 'm1'], [0, 10], [0, 10])
    assert waits == [['/a', '/clock', '/v/clock']]
    assert list(bag_flow.budgets) == [MAX_WINDOW - 2] * 2
    assert list(views_flow.budgets) == [MAX_WINDOW - 2]
    assert logger.warnings == []
