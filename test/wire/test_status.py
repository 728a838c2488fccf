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

"""~/get_status's Status: every field of the srv, both ways, from one derived table."""

import dataclasses

from builtin_interfaces.msg import Time as TimeMsg
import pytest
from rclpy.serialization import serialize_message
from sim_clock.client import Status as ClientStatus
from sim_clock.client.results import Status as ResultsStatus
from sim_clock.srv import GetStatus
from sim_clock.wire.status import fill_status
from sim_clock.wire.status import Status
from sim_clock.wire.status import status_fields
from sim_clock.wire.status import status_from_response

pytestmark = pytest.mark.fast


def _distinct_status() -> Status:
    """Return a Status whose every field holds a value of its own, none a default."""
    values = {}
    for index, field in enumerate(status_fields()):
        kind = field.field_type
        if field.is_time:
            value = 1_000_000_000 * index + 7
        elif field.is_times:
            value = (1_000_000_000 * index + 1, 2)
        elif kind == 'string':
            value = f'value {index}'
        elif kind == 'boolean':
            value = True
        elif kind == 'double':
            value = 0.5 + index
        elif kind.startswith(('int', 'uint')):
            value = 1_000 + index
        elif kind == 'sequence<string>':
            value = (f'item {index}', 'other')
        elif kind == 'sequence<double>':
            value = (0.5 + index, 0.25)
        else:
            raise AssertionError(f'no test value for {field}: add one')
        values[field.attribute] = value
    return Status(**values)


def test_every_srv_field_has_its_status_attribute():
    """The table covers GetStatus.Response and Status, each field once, in the srv's order."""
    fields = status_fields()
    assert [f.field for f in fields] == list(GetStatus.Response.get_fields_and_field_types())
    assert {f.attribute for f in fields} == {f.name for f in dataclasses.fields(Status)}
    by_field = {f.field: f.attribute for f in fields}
    assert by_field['clock'] == 'time_ns'
    assert by_field['participants_done'] == 'participants_done_ns'
    assert by_field['output_gates_satisfied'] == 'output_gates_satisfied_ns'
    assert by_field['mode'] == 'mode'


def test_the_client_imports_the_one_status():
    """sim_clock.client.Status and client.results.Status are the wire's, one class."""
    assert ClientStatus is ResultsStatus is Status


def test_a_status_goes_through_its_response_and_back_unchanged():
    """Filled by the server, read by the client: every attribute as it was, with its type."""
    status = _distinct_status()
    response = fill_status(GetStatus.Response(), status)
    assert response.clock.sec == 4 and response.clock.nanosec == 7
    back = status_from_response(response)
    assert back == status
    for field in dataclasses.fields(Status):
        value = getattr(back, field.name)
        assert type(value) is type(getattr(status, field.name)), field.name


def test_the_answer_is_the_one_filled_field_by_field():
    """The bytes on the wire are those of a response set by hand, field by field."""
    status = _distinct_status()
    by_hand = GetStatus.Response()
    for field in status_fields():
        value = getattr(status, field.attribute)
        if field.is_time:
            value = TimeMsg(sec=value // 1_000_000_000, nanosec=value % 1_000_000_000)
        elif field.is_times:
            value = [TimeMsg(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)
                     for ns in value]
        elif field.is_sequence:
            value = list(value)
        setattr(by_hand, field.field, value)
    assert serialize_message(fill_status(GetStatus.Response(), status)) == serialize_message(
        by_hand)


def test_the_defaults_read_back_from_an_empty_response():
    """An answer with nothing set is the Status of its zero values and empty tuples."""
    status = status_from_response(GetStatus.Response())
    assert (status.mode, status.frame, status.time_ns) == ('', 0, 0)
    assert status.participants == () and status.participants_done_ns == ()


def test_a_field_on_one_side_only_is_an_error():
    """A Status without a field of the srv, or with one the srv lacks, raises naming it."""
    short = dataclasses.make_dataclass('Short', [
        (f.name, f.type) for f in dataclasses.fields(Status) if f.name != 'expected_missing'])
    with pytest.raises(AttributeError, match=r"no Status attribute for \['expected_missing'\]"):
        status_fields(GetStatus.Response, short)
    long = dataclasses.make_dataclass('Long', [
        *((f.name, f.type) for f in dataclasses.fields(Status)), ('uptime_ns', int)])
    with pytest.raises(AttributeError, match=r"no GetStatus field for \['uptime_ns'\]"):
        status_fields(GetStatus.Response, long)
