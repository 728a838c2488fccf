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
Guard against setuptools builds of sim_clock.

sim_clock defines ROS 2 services, which ament_cmake generates: the package is built by
CMakeLists.txt (package.xml says build_type ament_cmake), with `colcon build` or
scripts/setup.sh. A `pip install .` of this folder would install the Python modules without the
generated sim_clock.srv, and over an existing install it would remove them, so this file stops
such a build with an explanation instead.
"""

import sys

sys.exit(
    'sim_clock is built with CMake because it generates ROS 2 interfaces: run `colcon build` '
    'in a workspace, or scripts/setup.sh for the virtual-environment set-up (see README.md). '
    'pip cannot build it.')
