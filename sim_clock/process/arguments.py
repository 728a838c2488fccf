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
An executable's command line: its own arguments and the ROS arguments, apart and checked.

Every executable of the package (clock_server, bag_player, recorder) reads its command line
here before any ROS entity exists, so that a mistake in either part ends the process with a
usage error (exit code 2) and one line, never a traceback from ``rclpy.init``.
"""

from typing import List
from typing import Tuple

from rclpy.utilities import remove_ros_args
from sim_clock.compat import ROS_ARGS_ERROR


class InvalidRosArguments(ValueError):
    """The ROS arguments are not valid for rcl; the message says why."""


#: The flags of a parameter override among ROS arguments.
_PARAMETER_FLAGS = ('-p', '--param')
#: Where ROS arguments end (rcl's ``--``) or begin.
_ROS_ARGS, _ROS_ARGS_END = '--ros-args', '--'


def split_ros_args(argv: List[str]) -> Tuple[List[str], List[str]]:
    """
    Return the executable's own arguments and the ROS arguments (for ``rclpy.init``), apart.

    ROS arguments are those of each ``--ros-args`` section, up to ``--`` or the end; the first
    item (the program) goes to both. rcl's own split (``remove_ros_args``) would take
    ``-m /a:=/b``'s rule for a deprecated remapping outside ``--ros-args``, and apply it to
    every node of the process.
    """
    own, ros, in_ros_args = argv[:1], argv[:1], False
    for argument in argv[1:]:
        if argument == _ROS_ARGS:
            in_ros_args = True
            ros.append(argument)
        elif in_ros_args and argument == _ROS_ARGS_END:
            in_ros_args = False
        else:
            (ros if in_ros_args else own).append(argument)
    return own, ros


def empty_parameter_values(argv: List[str]) -> List[str]:
    """
    Return ``argv`` with each ``-p NAME:=`` among ROS arguments as ``-p NAME:=''``.

    rcl refuses a parameter override with nothing after ``:=``; here it is the empty string
    (``expected_participants:=``: nobody), as ``''`` writes it in the YAML that rcl parses.
    """
    result, in_ros_args, after_flag = [], False, False
    for argument in argv:
        if argument == _ROS_ARGS:
            in_ros_args = True
        elif argument == _ROS_ARGS_END:
            in_ros_args = False
        elif in_ros_args and after_flag and argument.endswith(':=') and \
                argument.count(':=') == 1 and len(argument) > 2:
            argument += "''"
        after_flag = in_ros_args and argument in _PARAMETER_FLAGS
        result.append(argument)
    return result


def split_command_line(argv: List[str]) -> Tuple[List[str], List[str]]:
    """
    Return (the executable's own arguments, the ROS arguments for ``rclpy.init``).

    Empty parameter values are the empty string (:func:`empty_parameter_values`). The ROS
    arguments are checked by :func:`check_ros_args`, once the own ones (``--help``) were.
    """
    own, ros = split_ros_args(argv)
    return own, empty_parameter_values(ros)


def check_ros_args(ros: List[str]) -> None:
    """Raise :class:`InvalidRosArguments` if rcl refuses the ROS arguments ``ros``."""
    try:
        remove_ros_args(ros)
    except ROS_ARGS_ERROR as error:
        raise InvalidRosArguments(f'invalid ROS arguments: {error}') from None
