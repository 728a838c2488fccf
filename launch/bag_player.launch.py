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
Replay a bag as the clock server: the bag's time is /clock, in every clock mode.

    ros2 launch sim_clock bag_player.launch.py bag:=/path/to/bag sync:=true time_step:=0.01
    ros2 launch sim_clock bag_player.launch.py bag:=my_bag topics:='/scan /odom' loop:=true \
        remappings:='/scan:=/sim/scan'

Parameters come from ``params_file`` (config/sim_clock.yaml by default). Each parameter is also
a launch argument (``--show-args`` lists them with their defaults): an argument given overrides
the file, whatever its value; one not given (its default ``params_file``) leaves the file's
value, ``use_sim_time`` included. ``topics``, ``start_at_zero``, ``progress``, ``follow_clock``
and ``play_args`` (any other ``ros2 bag play`` flags the player takes, as one text:
``play_args:='--start-offset 2 --exclude-topics /tf -i second_bag'``) are the player's command
line; ``remappings`` the node's remappings.
"""

import os
import shlex

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

# name -> description. The defaults are those of config/sim_clock.yaml, as installed, and loop's.
PARAMETER_ARGUMENTS = {
    'sync': 'Step the bag: time advances only by ~/step calls (true/false).',
    'time_step': 'One frame, in seconds (> 0): how much bag time a step plays.',
    'real_time_factor': 'Free-run pace: 1.0 the bag as recorded, 2.0 twice as fast, 0 as fast '
                        'as possible.',
    'mode': "'simulation' (frames of time_step) or 'real_time' (the bag at wall pace).",
    'paused': 'Start paused (true/false).',
    'loop': 'At the end of the bag start again from its beginning (a reset).',
    'stay_at_end': 'Free run and real time without loop: at the end of the bag pause there '
                   'and keep serving; false: the player ends, as ros2 bag play does.',
    'publish_rate': '/clock rate in Hz while time is not advancing.',
    'owner_timeout': 'Seconds without a call from the sync holder before its hold lapses; '
                     '0 never.',
    'participant_timeout': 'Seconds a frame waits for a participant before it is late.',
    'ack_timeout': 'Seconds a step waits for its messages to be acknowledged; 0 no wait.',
    'max_clock_rate': 'Free run: at most this many /clock messages a wall second (a grid of '
                      'frames); every frame still publishes its messages. 0 every frame.',
    'start_time': "Taken for the same launch arguments as the clock server: a bag player's "
                  "time is the bag's, so only 0 is accepted.",
    'output_gates': "Frames that wait for a message on a topic: 'TOPIC[@PERIOD_S][:TIMEOUT_S]' "
                    "entries separated by spaces or commas, e.g. '/cmd@0.05 /odom:2'; '' none.",
    'expected_participants': 'Nodes no frame goes out without, until each said on ~/ready that '
                             "its endpoints matched, e.g. '/perception /planning'; '' none.",
    'frame_events': 'How many frame events the server keeps for trace, report and top; 0 '
                    'none.',
    'publish_frame_events': 'Also publish each frame event on ~/frame_events (true/false).',
}
#: The player's own parameters and their defaults (the others are in config/sim_clock.yaml).
PLAYER_DEFAULTS = {'loop': False, 'stay_at_end': False}
#: The node's parameter that is an argument but not in config/sim_clock.yaml, and its default.
NODE_DEFAULTS = {'use_sim_time': False}


def _split_remappings(text: str) -> list:
    """Return ``[(from, to)]`` of 'from:=to' pairs separated by spaces or commas."""
    pairs = []
    for item in text.replace(',', ' ').split():
        source, separator, target = item.partition(':=')
        if not separator or not source or not target:
            raise ValueError(f"remappings: '{item}' is not of the form from:=to")
        pairs.append((source, target))
    return pairs


def _default_params() -> str:
    return os.path.join(get_package_share_directory('sim_clock'), 'config', 'sim_clock.yaml')


def _defaults() -> dict:
    """Return {parameter: its default} of every argument that sets one: the file's, the node's."""
    with open(_default_params()) as config:
        values = dict(yaml.safe_load(config)['/**']['ros__parameters'], **PLAYER_DEFAULTS)
    return dict({name: values[name] for name in PARAMETER_ARGUMENTS}, **NODE_DEFAULTS)


def _node(context):
    configuration = context.launch_configurations
    overrides = parameter_overrides(configuration, _defaults())
    arguments = [configuration['bag']]
    if configuration['topics'].strip():
        arguments += ['--topics', *configuration['topics'].split()]
    if yaml.safe_load(configuration['start_at_zero']):
        arguments.append('--start-at-zero')
    if not yaml.safe_load(configuration['progress']):
        arguments.append('--no-progress')
    if yaml.safe_load(configuration['follow_clock']):
        arguments.append('--follow-clock')
    # Checked by the player itself, before any ROS entity exists: a wrong flag ends it with
    # one line naming the flag (exit 2).
    arguments += shlex.split(configuration['play_args'])
    return [Node(
        package='sim_clock',
        executable='bag_player',
        name=LaunchConfiguration('node_name'),
        namespace=LaunchConfiguration('namespace'),
        arguments=arguments,
        parameters=[LaunchConfiguration('params_file'), overrides],
        remappings=_split_remappings(configuration['remappings']),
        output='screen',
        emulate_tty=True,
    )]


def generate_launch_description():
    """Declare the bag, the player's options and its parameters; start the bag player."""
    default_params = _default_params()
    arguments = [
        DeclareLaunchArgument(
            'bag', description='The rosbag2 directory, or a .mcap or .db3 file, to replay.'),
        DeclareLaunchArgument(
            'topics', default_value='',
            description='Topics to play, separated by spaces; empty: all but /clock.'),
        DeclareLaunchArgument(
            'start_at_zero', default_value='false',
            description="/clock starts at zero instead of the bag's first timestamp."),
        DeclareLaunchArgument(
            'progress', default_value='true',
            description='A progress line in the log every 5 s while playing (the player writes '
                        'to launch, not to a terminal); false: none (~/get_progress answers '
                        'either way).'),
        DeclareLaunchArgument(
            'follow_clock', default_value='false',
            description='Publish no /clock: play each message once /clock from another source '
                        'reaches its stamp (doc/bags.md, "Following another clock").'),
        DeclareLaunchArgument(
            'play_args', default_value='',
            description="Other 'ros2 bag play' flags for the player, as one text, e.g. "
                        "'--start-offset 2 --exclude-topics /tf -i second_bag' "
                        '(doc/bags.md lists them).'),
        DeclareLaunchArgument(
            'remappings', default_value='',
            description="Topic remappings 'from:=to', separated by spaces or commas."),
        DeclareLaunchArgument(
            'params_file', default_value=default_params,
            description='YAML file with the clock server parameters.'),
        DeclareLaunchArgument(
            'use_sim_time', default_value=FROM_PARAMS_FILE,
            description=describe('use_sim_time of the player node itself (it runs either way).',
                                 NODE_DEFAULTS['use_sim_time'])),
        DeclareLaunchArgument(
            'node_name', default_value='sim_clock',
            description='Node name; services live under /<namespace>/<node_name>/.'),
        DeclareLaunchArgument(
            'namespace', default_value='',
            description='Namespace of the player node (/clock stays global).'),
    ]
    defaults = _defaults()
    arguments += [
        DeclareLaunchArgument(name, default_value=FROM_PARAMS_FILE,
                              description=describe(description, defaults[name]))
        for name, description in PARAMETER_ARGUMENTS.items()]
    return LaunchDescription(arguments + [OpaqueFunction(function=_node)])
