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

from builtin_interfaces.msg import Time
import pytest
from sim_clock.client.results import ResetEvent
from sim_clock.client.results import SimClockError
from sim_clock.client.results import SimClockLate
from sim_clock.client.results import SimClockNoService
from sim_clock.client.results import SimClockRefused
from sim_clock.client.results import SimClockTimeout
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


def test_late_participants_are_a_refusal_with_where_the_step_stopped():
    """SimClockLate: the late names and the result, caught as a refusal."""
    result = StepResult(frame=1, time_ns=10, epoch=0)
    with pytest.raises(SimClockRefused) as caught:
        raise SimClockLate('/sim_clock', 'step', 'late: slow', ('slow',), result)
    assert caught.value.late == ['slow'] and caught.value.result is result


def test_no_answer_is_a_timeout_error():
    """A missing service is a timeout, and both are TimeoutError as well as ours."""
    assert issubclass(SimClockNoService, SimClockTimeout)
    assert issubclass(SimClockTimeout, TimeoutError)
    assert issubclass(SimClockTimeout, SimClockError)
    assert not issubclass(SimClockTimeout, SimClockRefused)
