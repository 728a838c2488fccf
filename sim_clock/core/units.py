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

"""Time as integer nanoseconds: the units, the limits of a ROS time, and exact conversions."""

NS_PER_SEC = 1_000_000_000
NS_PER_MS = 1_000_000

#: The latest time a ``builtin_interfaces/Time`` can carry (its ``sec`` is an int32).
MAX_TIME_NS = (2**31 - 1) * NS_PER_SEC + NS_PER_SEC - 1


def split_ns(time_ns: int) -> tuple:
    """Split nanoseconds into (sec, nanosec), as ``builtin_interfaces/Time`` holds them."""
    return divmod(time_ns, NS_PER_SEC)


def join_ns(stamp) -> int:
    """Return the nanoseconds of a ``builtin_interfaces/Time`` (anything with sec, nanosec)."""
    return stamp.sec * NS_PER_SEC + stamp.nanosec


def format_seconds(time_ns: int) -> str:
    """Format integer nanoseconds as seconds with every digit: ``12.000000000``."""
    sec, nanosec = split_ns(time_ns)
    return f'{sec}.{nanosec:09d}'
