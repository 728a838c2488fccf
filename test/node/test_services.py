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

"""Every field of every outcome reaches its service's response; a mismatch is an error."""

import dataclasses
import enum

from builtin_interfaces.msg import Time as TimeMsg
import pytest
from sim_clock.bag.player import SeekOutcome
from sim_clock.bag.progress import ProgressReport
from sim_clock.core.units import join_ns
from sim_clock.node.engine.parts import StepOutcome
from sim_clock.node.outcomes import Answer
from sim_clock.node.outcomes import SyncOutcome
from sim_clock.node.participants import JoinOutcome
from sim_clock.node.participants import LeaveOutcome
from sim_clock.node.services import fill
from sim_clock.node.services import fill_step
from sim_clock.srv import GetProgress
from sim_clock.srv import Join
from sim_clock.srv import Leave
from sim_clock.srv import Seek
from sim_clock.srv import Step
from sim_clock.srv import SyncModeCmd
from std_srvs.srv import SetBool
from std_srvs.srv import Trigger

pytestmark = pytest.mark.fast

PAIRS = [(StepOutcome, Step), (SyncOutcome, SyncModeCmd), (Answer, Trigger), (Answer, SetBool),
         (JoinOutcome, Join), (LeaveOutcome, Leave), (SeekOutcome, Seek),
         (ProgressReport, GetProgress)]


def _distinct(field: dataclasses.Field, index: int):
    """Return a value for ``field`` unlike any default: its position makes it unique."""
    kind = field.type
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return list(kind)[-1]
    if kind in (bool, 'bool'):
        return True
    if kind in (int, 'int'):
        return 1_000_000_007 + index
    if kind in (float, 'float'):
        return 0.5 + index
    if kind in (str, 'str'):
        return f'value {index}'
    text = str(kind)
    if 'TimeMsg' in text or 'Time' in text:
        return [TimeMsg(sec=index, nanosec=7)]
    if 'float' in text:
        return [0.5 + index]
    return [f'item {index}']


@pytest.mark.parametrize('outcome_type, srv_type', PAIRS,
                         ids=[f'{o.__name__}-{s.__name__}' for o, s in PAIRS])
def test_every_outcome_field_reaches_its_response(outcome_type, srv_type):
    """Each field, set to a value of its own, is found in the response, by name or as a Time."""
    fields = dataclasses.fields(outcome_type)
    outcome = outcome_type(**{field.name: _distinct(field, index)
                              for index, field in enumerate(fields)})
    response = fill(srv_type.Response(), outcome)
    for field in fields:
        value = getattr(outcome, field.name)
        if isinstance(value, enum.Enum):
            assert getattr(response, field.name) == value.value, field.name
        elif hasattr(response, field.name):
            got = getattr(response, field.name)
            assert (list(got) if isinstance(value, list) else got) == value, field.name
        else:
            assert field.name.endswith('_ns'), field.name
            assert join_ns(getattr(response, field.name[:-3])) == value, field.name


def test_a_field_with_no_place_in_the_response_is_an_error():
    """An outcome field the response lacks raises, naming both: never dropped in silence."""
    with pytest.raises(AttributeError, match='Trigger_Response has no field frame for'):
        fill(Trigger.Response(), StepOutcome(success=True, message='', frame=1, clock_ns=0,
                                             epoch=0))


@pytest.mark.parametrize('lists', [False, True], ids=['quick', 'with-lists'])
def test_the_step_fill_sets_what_the_generic_fill_sets(lists):
    """The hot path's own fill of ~/step's response leaves it as :func:`fill` does."""
    fields = dataclasses.fields(StepOutcome)
    outcome = StepOutcome(**{field.name: _distinct(field, index)
                             for index, field in enumerate(fields)})
    if not lists:
        outcome = dataclasses.replace(outcome, late=[], unacknowledged=[])
    assert fill_step(Step.Response(), outcome) == fill(Step.Response(), outcome)
