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

"""Launch arguments over params_file (``sim_clock.process.launch_arguments``): given ones win."""

import pytest
from sim_clock.core import settings
from sim_clock.process.launch_arguments import describe
from sim_clock.process.launch_arguments import FROM_PARAMS_FILE
from sim_clock.process.launch_arguments import parameter_overrides
from sim_clock.process.launch_arguments import parameter_value

pytestmark = pytest.mark.fast

#: The launch files' parameter arguments and their defaults (config/sim_clock.yaml's).
DEFAULTS = dict(settings.DEFAULTS, loop=False, use_sim_time=False)


def _given(**arguments) -> dict:
    """Return the launch configurations: the arguments given, the rest at the default."""
    return dict({name: FROM_PARAMS_FILE for name in DEFAULTS}, **arguments)


def test_arguments_not_given_leave_the_file_alone():
    """Nothing given on the command line: no override, params_file holds every value."""
    assert parameter_overrides(_given(), DEFAULTS) == {}


def test_arguments_given_equal_to_the_default_override_the_file():
    """sync:=false time_step:=0.01 over a file of sync true and time_step 0.005: both set."""
    given = _given(sync='false', time_step='0.01', real_time_factor='2.0')
    assert parameter_overrides(given, DEFAULTS) == {
        'sync': False, 'time_step': 0.01, 'real_time_factor': 2.0}


@pytest.mark.parametrize('name, text, value', [
    ('sync', 'true', True),
    ('paused', 'false', False),
    ('loop', 'True', True),
    ('use_sim_time', 'true', True),
    ('time_step', '0.005', 0.005),
    # A whole number for a double parameter is a double: rclpy refuses an integer there.
    ('time_step', '1', 1.0),
    ('real_time_factor', '0', 0.0),
    # Text parameters keep their text, numbers and all.
    ('start_time', '0', '0'),
    ('start_time', '1700000000.123456789', '1700000000.123456789'),
    ('mode', 'real_time', 'real_time'),
    # '' is a value like any other: no gates, over a file that names some.
    ('output_gates', '', ''),
    ('expected_participants', "['/a', '/b']", "['/a', '/b']"),
])
def test_a_given_argument_takes_its_parameters_type(name, text, value):
    """Each given text becomes a value of its parameter's type, as the node declares it."""
    overrides = parameter_overrides(_given(**{name: text}), DEFAULTS)
    assert overrides == {name: value}
    assert type(overrides[name]) is type(value)


def test_a_value_of_another_type_goes_to_the_node_to_be_refused():
    """Not the parameter's type: passed on as read, for the node to refuse with its reason."""
    assert parameter_value('fast', 0.01) == 'fast'
    assert parameter_value('yes', False) is True  # YAML 1.1, as in a params file


def test_the_description_tells_the_default_that_holds_without_the_file():
    """``--show-args`` says what holds when the argument is not given."""
    assert describe('One frame, in seconds.', 0.01) == (
        "One frame, in seconds. Not given: params_file's value, else 0.01.")
    assert describe('Gates.', '').endswith("else ''.")
    assert describe('Sync.', False).endswith('else false.')
    assert describe('Start.', '0').endswith('else 0.')
