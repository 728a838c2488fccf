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

"""The server's throttled logger: per call site, on steady time, rclpy reached only to say."""

import pytest
import rclpy.logging
from sim_clock.node.throttled_logger import ThrottledLogger

pytestmark = pytest.mark.fast

MS = 1_000_000


class Lines:
    """A logger of our own that keeps what reached it, as (level, message, kwargs)."""

    def __init__(self):
        self.lines = []

    def __getattr__(self, level):
        def log(message, **kwargs):
            self.lines.append((level, message, kwargs))
            return True
        return log


class Steady:
    """A steady clock the test moves."""

    def __init__(self):
        self.ns = 0

    def __call__(self) -> int:
        return self.ns


def make():
    lines, clock = Lines(), Steady()
    return ThrottledLogger(lines, clock), lines, clock


def test_a_throttled_call_site_says_once_a_period_and_returns_whether_it_said():
    logger, lines, clock = make()
    said = []
    for tick in range(5001):  # a call a ms for 5 s, a warning throttled to 2 s
        clock.ns = tick * MS
        said.append(logger.warning(f'late at {tick}', throttle_duration_sec=2.0))
    assert [message for _, message, _ in lines.lines] == [
        'late at 0', 'late at 2000', 'late at 4000']
    assert said.count(True) == 3 and said.count(False) == 4998
    assert all(kwargs == {} for _, _, kwargs in lines.lines)  # nothing left for rclpy to do


def test_two_call_sites_are_throttled_apart_and_unthrottled_calls_always_say():
    logger, lines, clock = make()
    for tick in range(3):
        clock.ns = tick * MS
        logger.warning('first site', throttle_duration_sec=1.0)
        logger.error('second site', throttle_duration_sec=1.0)
        logger.info('every time')
    assert [(level, message) for level, message, _ in lines.lines] == [
        ('warning', 'first site'), ('error', 'second site'), ('info', 'every time'),
        ('info', 'every time'), ('info', 'every time')]


def test_once_says_a_call_site_a_single_time_and_other_arguments_pass_on():
    logger, lines, clock = make()
    for _ in range(3):
        logger.warning('shared topics', once=True)
    logger.info('with a name', skip_first=False)
    assert lines.lines == [('warning', 'shared topics', {}),
                           ('info', 'with a name', {'skip_first': False})]


def test_rclpy_s_own_logger_takes_every_level_through_it():
    """One severity per call site, as rclpy keeps: each level reaches it from a line of its own."""
    logger = ThrottledLogger(rclpy.logging.get_logger('throttled_logger_test'), Steady())
    said = [(logger.info('an info line'),
             logger.warning('a warning line', throttle_duration_sec=5.0),
             logger.error('an error line', once=True)) for _ in range(2)]
    assert said == [(True, True, True), (True, False, False)]
