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
Start the sim_clock clock server.

    ros2 launch sim_clock sim_clock.launch.py
    ros2 launch sim_clock sim_clock.launch.py mode:=simulation sync:=true time_step:=0.001

Parameters come from ``params_file`` (config/sim_clock.yaml by default). Each parameter is also
a launch argument (``--show-args`` lists them with their defaults): an argument given overrides
the file, whatever its value; one not given (its default ``params_file``) leaves the file's
value. ``use_sim_time`` and ``clock_views_file`` likewise: the server runs the same with either
``use_sim_time``, since its timers are wall timers.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.actions import OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from sim_clock.process.launch_arguments import describe
from sim_clock.process.launch_arguments import FROM_PARAMS_FILE
from sim_clock.process.launch_arguments import parameter_overrides
import yaml

# name -> description. The defaults are those of config/sim_clock.yaml, as installed.
PARAMETER_ARGUMENTS = {
    'mode': "Time mode: 'real_time' (wall clock) or 'simulation' (frames of time_step).",
    'sync': 'Simulation mode: time advances only by ~/step calls (true/false).',
    'time_step': 'One frame, in seconds (> 0, at most 86400).',
    'real_time_factor': 'Free-run pace: 1.0 wall pace, 2.0 twice as fast, 0 as fast as possible.',
    'publish_rate': '/clock rate in Hz in real_time mode and while time is not advancing.',
    'paused': 'Start with real-time and free-run time frozen (true/false).',
    'owner_timeout': 'Seconds without a call from the sync holder before its hold lapses; '
                     '0 never.',
    'participant_timeout': 'Seconds a frame waits for a participant before it is late.',
    'ack_timeout': 'Seconds a step waits for its frames to be acknowledged; 0 no wait.',
    'start_time': "Where time starts and resets go: 0, 'wall' (the wall clock then), or "
                  'seconds.',
    'max_clock_rate': 'Free run: at most this many /clock messages a wall second (a grid of '
                      'frames); 0 every frame.',
    'output_gates': "Frames that wait for a message on a topic: 'TOPIC[@PERIOD_S][:TIMEOUT_S]' "
                    "entries separated by spaces or commas, e.g. '/cmd@0.05 /odom:2'; '' none.",
    'expected_participants': 'Nodes no frame goes out without, until each said on ~/ready that '
                             "its endpoints matched, e.g. '/perception /planning'; '' none.",
    'frame_events': 'How many frame events the server keeps for trace, report and top; 0 '
                    'none.',
    'publish_frame_events': 'Also publish each frame event on ~/frame_events (true/false).',
}
#: The node's parameters that are arguments but not in config/sim_clock.yaml, and their defaults.
NODE_DEFAULTS = {'use_sim_time': False, 'clock_views_file': ''}


def _default_params() -> str:
    return os.path.join(get_package_share_directory('sim_clock'), 'config', 'sim_clock.yaml')


def _defaults() -> dict:
    """Return {parameter: its default} of every argument that sets one: config/sim_clock.yaml's."""
    with open(_default_params()) as config:
        values = yaml.safe_load(config)['/**']['ros__parameters']
    return dict({name: values[name] for name in PARAMETER_ARGUMENTS}, **NODE_DEFAULTS)


def _node(context):
    overrides = parameter_overrides(context.launch_configurations, _defaults())
    return [Node(
        package='sim_clock',
        executable='clock_server',
        name=LaunchConfiguration('node_name'),
        namespace=LaunchConfiguration('namespace'),
        parameters=[LaunchConfiguration('params_file'), overrides],
        output='screen',
        emulate_tty=True,
    )]


def generate_launch_description():
    """Declare every parameter as a launch argument and start the clock server."""
    default_params = _default_params()
    arguments = [
        DeclareLaunchArgument(
            'params_file', default_value=default_params,
            description='YAML file with the clock server parameters.'),
        DeclareLaunchArgument(
            'use_sim_time', default_value=FROM_PARAMS_FILE,
            description=describe('use_sim_time of the clock server node itself (it runs either '
                                 'way).', NODE_DEFAULTS['use_sim_time'])),
        DeclareLaunchArgument(
            'node_name', default_value='sim_clock',
            description='Node name; services live under /<namespace>/<node_name>/.'),
        DeclareLaunchArgument(
            'clock_views_file', default_value=FROM_PARAMS_FILE,
            description=describe('YAML file of clock views, each published on /<name>/clock '
                                 "(config/clock_views.yaml is an example); '' none.",
                                 NODE_DEFAULTS['clock_views_file'])),
        DeclareLaunchArgument(
            'namespace', default_value='',
            description='Namespace of the clock server node (/clock stays global).'),
    ]
    defaults = _defaults()
    arguments += [
        DeclareLaunchArgument(name, default_value=FROM_PARAMS_FILE,
                              description=describe(description, defaults[name]))
        for name, description in PARAMETER_ARGUMENTS.items()]
    return LaunchDescription(arguments + [OpaqueFunction(function=_node)])
