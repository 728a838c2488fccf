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
``~/get_status``: :class:`Status`, and its conversions from and to ``GetStatus.Response``.

The server makes a :class:`Status` and fills its answer from it (:func:`fill_status`); the
client reads the answer back into one (:func:`status_from_response`). How each field goes
is derived from the service's own field types (``srv/GetStatus.srv``), by one rule: a
``builtin_interfaces/Time`` field ``x`` is the integer ``x_ns`` here (``clock`` is
``time_ns``), a sequence is a tuple. A new field is its line in the ``.srv`` and its line in
:class:`Status`; a field on one side only raises (``test/wire/test_status.py``).
"""

import dataclasses
from dataclasses import dataclass
import functools
from typing import Tuple

from builtin_interfaces.msg import Time as TimeMsg
from sim_clock.core.units import join_ns
from sim_clock.core.units import split_ns
from sim_clock.srv import GetStatus

#: The response's Time fields whose Status attribute is not ``<field>_ns``.
RENAMED = {'clock': 'time_ns'}
#: The field types of ``builtin_interfaces/Time``, one and a sequence of them.
TIME_TYPE = 'builtin_interfaces/Time'
TIMES_TYPE = f'sequence<{TIME_TYPE}>'


@dataclass(frozen=True)
class Status:
    """The server's state, as ``~/get_status`` reports it."""

    mode: str
    sync: bool
    paused: bool
    frame: int
    time_ns: int
    epoch: int
    owner: str
    real_time_factor: float
    time_step_ns: int
    publish_rate: float
    #: Other nodes publishing on /clock ("<node> on <topic>"): an alarm; empty: none.
    other_clock_sources: tuple = ()
    #: The clock views ("<name>: offset <s> s, drift <ppm> ppm, on /<name>/clock").
    clock_views: tuple = ()
    #: Free run's /clock cap, Hz (0: none), and its stride (1 frame in clock_stride goes out).
    max_clock_rate: float = 0.0
    clock_stride: int = 1
    #: The participants by name, and for each the last time it finished (ns, 0: none yet) and
    #: its slowest answer so far (s).
    participants: tuple = ()
    participants_done_ns: tuple = ()
    participants_slowest: tuple = ()
    #: The participants the current frame still waits for.
    waiting_for: tuple = ()
    #: The output gates ('TOPIC[@PERIOD_S][:TIMEOUT_S]'), and for each the /clock time of the
    #: last frame a message released (ns, 0: none yet) and its slowest wait so far (s).
    output_gates: tuple = ()
    output_gates_satisfied_ns: tuple = ()
    output_gates_slowest: tuple = ()
    #: The gated topics the current frame still waits for: a message, or (the next frame) a
    #: writer.
    output_gates_waiting: tuple = ()
    #: The nodes no frame goes out without (expected_participants), and what each one not
    #: ready lacks, in words (one line per node: ``'<node>: <what it lacks>'``).
    expected_participants: tuple = ()
    expected_missing: tuple = ()


@dataclass(frozen=True)
class StatusField:
    """One field of ``GetStatus.Response`` and the :class:`Status` attribute that holds it."""

    #: The response's field name, and its type as rosidl names it.
    field: str
    field_type: str
    #: The Status attribute.
    attribute: str

    @property
    def is_time(self) -> bool:
        """Whether the field is a Time, held as integer ns."""
        return self.field_type == TIME_TYPE

    @property
    def is_times(self) -> bool:
        """Whether the field is a sequence of Time, held as a tuple of integer ns."""
        return self.field_type == TIMES_TYPE

    @property
    def is_sequence(self) -> bool:
        """Whether the field is a sequence (of any type), held as a tuple."""
        return self.field_type.startswith('sequence<')


@functools.lru_cache(maxsize=None)
def status_fields(response_type=GetStatus.Response,
                  status_type=Status) -> Tuple[StatusField, ...]:
    """
    Return every field of ``response_type``, in its order, with its ``status_type`` attribute.

    Checked once: a field of either that the other lacks raises ``AttributeError`` naming
    it, never dropped in silence.
    """
    fields = []
    for name, field_type in response_type.get_fields_and_field_types().items():
        timed = field_type in (TIME_TYPE, TIMES_TYPE)
        attribute = RENAMED.get(name, f'{name}_ns' if timed else name)
        fields.append(StatusField(name, field_type, attribute))
    attributes = {field.attribute for field in fields}
    declared = {field.name for field in dataclasses.fields(status_type)}
    if attributes != declared:
        raise AttributeError(
            f'{response_type.__name__} and {status_type.__name__} disagree: '
            f'no Status attribute for {sorted(attributes - declared)}, '
            f'no GetStatus field for {sorted(declared - attributes)}')
    return tuple(fields)


def fill_status(response, status: Status):
    """Set each field of ``status`` on ``response`` (a ``GetStatus.Response``); return it."""
    for field in status_fields():
        value = getattr(status, field.attribute)
        if field.is_time:
            stamp = getattr(response, field.field)
            stamp.sec, stamp.nanosec = split_ns(value)
        elif field.is_times:
            setattr(response, field.field, [time_msg(time_ns) for time_ns in value])
        else:
            setattr(response, field.field, value)
    return response


def status_from_response(response) -> Status:
    """Return the :class:`Status` that ``response`` (a ``GetStatus.Response``) says."""
    values = {}
    for field in status_fields():
        value = getattr(response, field.field)
        if field.is_time:
            value = join_ns(value)
        elif field.is_times:
            value = tuple(map(join_ns, value))
        elif field.is_sequence:
            value = tuple(value)
        values[field.attribute] = value
    return Status(**values)


def time_msg(time_ns: int) -> TimeMsg:
    """Return ``time_ns`` as a ``builtin_interfaces/Time``."""
    stamp = TimeMsg()
    stamp.sec, stamp.nanosec = split_ns(time_ns)
    return stamp
