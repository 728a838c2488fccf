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
The clock server in free run at 10x, and a demo node living on its /clock.

    ros2 launch <path to>/demo.launch.py
"""

import os
import sys

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import ExecuteProcess
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource


def generate_launch_description():
    """Start sim_clock at real_time_factor 10 and the demo node with use_sim_time."""
    server = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(
            get_package_share_directory('sim_clock'), 'launch', 'sim_clock.launch.py')),
        launch_arguments={'real_time_factor': '10.0', 'time_step': '0.01'}.items())
    demo_node = ExecuteProcess(
        cmd=[sys.executable, os.path.join(os.path.dirname(__file__), 'demo_node.py'),
             '--ros-args', '-p', 'use_sim_time:=true'],
        name='sim_time_listener', output='screen')
    return LaunchDescription([server, demo_node])
