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
Parameter launch arguments over a params file: an argument given wins, whatever its value.

The launch files declare each parameter's argument with the default :data:`FROM_PARAMS_FILE`,
which means "not given": the node then takes ``params_file``'s value (or, where the file has
none, its own default). A value given on the command line (or by an including launch file)
goes to the node after the file, so it wins, even when it equals the default. Launch itself
cannot tell a default from a value given equal to it, hence the sentinel. No launch here: this
module is imported by the launch files and tested where launch is not installed.
"""

from typing import Mapping

import yaml

#: A parameter argument's default: not given, so ``params_file`` decides. No parameter takes
#: this text as a value, and ``--show-args`` prints it as ``(default: 'params_file')``.
FROM_PARAMS_FILE = 'params_file'


def argument_text(value) -> str:
    """Return a parameter value as launch argument text: true, 0.01, simulation."""
    if isinstance(value, str):
        return value
    return yaml.safe_dump(value).split('\n')[0]


def describe(description: str, default) -> str:
    """Return an argument's description followed by what holds when it is not given."""
    text = argument_text(default) or "''"
    return f"{description} Not given: params_file's value, else {text}."


def parameter_value(text: str, default):
    """Return an argument's text as a value of its parameter's type (the type of ``default``)."""
    if isinstance(default, str):
        return text
    value = yaml.safe_load(text)
    if isinstance(default, float) and type(value) is int:
        return float(value)  # time_step:=1 is 1.0 s: rclpy refuses an integer for a double
    return value


def parameter_overrides(given: Mapping[str, str], defaults: Mapping[str, object]) -> dict:
    """
    Return ``{name: value}`` of the parameters to set over ``params_file``.

    ``given`` holds each argument's text as launch has it (``context.launch_configurations``):
    :data:`FROM_PARAMS_FILE` where it was not given. ``defaults`` names the parameters that
    are arguments; each default only gives its parameter's type.
    """
    return {name: parameter_value(given[name], default) for name, default in defaults.items()
            if given[name] != FROM_PARAMS_FILE}
