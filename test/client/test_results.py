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

"""What the client's calls return and raise: the results, and the errors' kinds and words."""

import dataclasses

from builtin_interfaces.msg import Time
import pytest
from sim_clock.client.results import ControlResult
from sim_clock.client.results import ResetEvent
from sim_clock.client.results import ResetResult
from sim_clock.client.results import SimClockClosed
from sim_clock.client.results import SimClockError
from sim_clock.client.results import SimClockInterrupted
from sim_clock.client.results import SimClockLate
from sim_clock.client.results import SimClockNoService
from sim_clock.client.results import SimClockRefused
from sim_clock.client.results import SimClockServerGone
from sim_clock.client.results import SimClockTimeout
from sim_clock.client.results import SimClockUnavailable
from sim_clock.client.results import StepResult
from sim_clock.msg import Reset

pytestmark = pytest.mark.fast


def test_a_reset_event_is_read_from_its_message_exactly():
    """Every field of sim_clock/msg/Reset, its times as integer ns."""
    msg = Reset(epoch=4, time_before=Time(sec=12, nanosec=1), time_after=Time(sec=0, nanosec=7),
                cause='seek requested', mode='simulation', sync=True)
    assert ResetEvent.from_msg(msg) == ResetEvent(
        epoch=4, time_before_ns=12_000_000_001, time_after_ns=7, cause='seek requested',
        mode='simulation', sync=True)


def test_a_step_result_in_seconds():
    """time_sec is the time in seconds; nothing unacknowledged by default."""
    result = StepResult(frame=3, time_ns=1_500_000_000, epoch=0)
    assert result.time_sec == 1.5 and result.unacknowledged == ()


def test_a_refusal_names_the_server_what_and_why():
    """The message says who refused what and why; reason and holder kept apart."""
    refused = SimClockRefused('/sim_clock', 'step', 'held', holder='alice')
    assert str(refused) == '/sim_clock refused step: held'
    assert (refused.reason, refused.holder) == ('held', 'alice')
    assert isinstance(refused, SimClockError) and isinstance(refused, RuntimeError)


def test_a_late_step_is_not_a_refusal_and_says_where_it_stopped():
    """SimClockLate: the late names, the result and the reason; a SimClockError, not refused."""
    result = StepResult(frame=1, time_ns=10, epoch=0)
    with pytest.raises(SimClockError) as caught:
        raise SimClockLate('/sim_clock', 'a step of 3', 'waits for slow', ('slow',), result)
    late = caught.value
    assert late.late == ['slow'] and late.result is result and late.reason == 'waits for slow'
    assert str(late) == '/sim_clock stopped a step of 3: waits for slow'
    assert not isinstance(late, SimClockRefused)


@pytest.mark.parametrize('kind, bases, not_bases', [
    (SimClockRefused, (SimClockError,), (SimClockLate, SimClockTimeout, SimClockUnavailable)),
    (SimClockLate, (SimClockError,), (SimClockRefused, SimClockTimeout, SimClockUnavailable)),
    (SimClockTimeout, (SimClockError, TimeoutError), (SimClockRefused, SimClockUnavailable)),
    (SimClockNoService, (SimClockUnavailable, SimClockTimeout, TimeoutError), (SimClockRefused,)),
    (SimClockServerGone, (SimClockUnavailable,), (SimClockTimeout, SimClockRefused)),
    (SimClockInterrupted, (SimClockError,), (SimClockRefused, SimClockTimeout)),
    (SimClockClosed, (SimClockError,), (SimClockRefused, SimClockUnavailable)),
], ids=lambda value: getattr(value, '__name__', ''))
def test_the_errors_are_a_tree_by_meaning(kind, bases, not_bases):
    """One base, SimClockError (a RuntimeError); beneath it one class per meaning."""
    assert issubclass(kind, SimClockError) and issubclass(kind, RuntimeError)
    assert all(issubclass(kind, base) for base in bases)
    assert not any(issubclass(kind, other) for other in not_bases)


def test_no_answer_is_a_timeout_error():
    """A missing service is a timeout, and both are TimeoutError as well as ours."""
    assert issubclass(SimClockNoService, SimClockTimeout)
    assert issubclass(SimClockTimeout, TimeoutError)
    assert issubclass(SimClockTimeout, SimClockError)
    assert not issubclass(SimClockTimeout, SimClockRefused)


def test_a_control_result_is_the_servers_words_typed():
    """Frozen, compared by value, ``str()`` its message."""
    result = ControlResult('paused at 5 ns')
    assert result.message == 'paused at 5 ns' and str(result) == 'paused at 5 ns'
    assert result == ControlResult('paused at 5 ns') != ControlResult('already paused')
    assert len({result, ControlResult('paused at 5 ns')}) == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.message = 'changed'


def test_a_reset_result_carries_the_epoch_and_whether_its_answer_was_lost():
    """ResetResult: message, epoch, answer_lost (False unless said)."""
    result = ResetResult('time reset to 0 ns (epoch 2)', epoch=2)
    assert (result.epoch, result.answer_lost, str(result)) == (
        2, False, 'time reset to 0 ns (epoch 2)')
    assert result != ResetResult('time reset to 0 ns (epoch 2)', epoch=2, answer_lost=True)
    assert result != ControlResult('time reset to 0 ns (epoch 2)')


@pytest.mark.parametrize('result', [ControlResult('sync on'), ResetResult('sync on', 1)],
                         ids=['control', 'reset'])
def test_a_result_compared_with_a_string_still_compares_its_message_with_a_warning(result):
    """These were strings: ``==`` and ``in`` with a str work one release more, and warn."""
    with pytest.warns(DeprecationWarning, match='use its .message'):
        assert result == 'sync on'
    with pytest.warns(DeprecationWarning, match='use its .message'):
        assert result != 'sync off'
    with pytest.warns(DeprecationWarning, match='use its .message'):
        assert 'on' in result
