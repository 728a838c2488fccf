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

"""The import rule of each part of the package (test_layout.py, test_fresh_imports.py)."""

#: part -> (its modules' prefix, the imports it must never make)
RULES = {
    'core': ('sim_clock.core', ('rclpy', 'rosbags', 'sim_clock.node', 'sim_clock.bag',
                                'sim_clock.client', 'sim_clock.wire', 'sim_clock.process',
                                'sim_clock._replay')),
    'wire': ('sim_clock.wire', ('rosbags', 'sim_clock.node', 'sim_clock.bag', 'sim_clock.client',
                                'sim_clock.process', 'sim_clock._replay')),
    'process': ('sim_clock.process', ('rosbags', 'sim_clock.node', 'sim_clock.bag',
                                      'sim_clock.client', 'sim_clock.wire', 'sim_clock._replay')),
    'node': ('sim_clock.node', ('rosbags', 'sim_clock.bag', 'sim_clock.client')),
    'bag': ('sim_clock.bag', ('sim_clock.client',)),
    'client': ('sim_clock.client', ('sim_clock.node', 'sim_clock.bag', 'sim_clock._replay')),
    'command': ('sim_clock.command', ('sim_clock.node', 'sim_clock.bag', 'sim_clock._replay')),
}


def within(name: str, prefix: str) -> bool:
    """Return whether module ``name`` is ``prefix`` or inside it."""
    return name == prefix or name.startswith(prefix + '.')
