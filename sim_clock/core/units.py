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

import decimal

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


def seconds_text_to_ns(text: str) -> int:
    """
    Return the integer nanoseconds of decimal seconds written as text, exactly: ``'1.5'``.

    Read as the decimal it is written as, never through a float, so ``'0.1'`` is 100000000 ns
    exactly. Raise ValueError, saying what is allowed, for anything else: not a number, not
    finite, below 0, finer than a nanosecond, or later than a ROS time can carry.
    """
    try:
        seconds = decimal.Decimal(text.strip())
    except decimal.InvalidOperation:
        raise ValueError(f'seconds must be a decimal number, got {text!r}') from None
    if not seconds.is_finite() or seconds < 0:
        raise ValueError(f'seconds must be a finite number, 0 or more, got {text!r}')
    exact = seconds.scaleb(9)
    if exact != exact.to_integral_value():
        raise ValueError(f'seconds must be whole nanoseconds (at most 9 decimals), got {text!r}')
    time_ns = int(exact)
    if time_ns > MAX_TIME_NS:
        raise ValueError(f'seconds must be at most {format_seconds(MAX_TIME_NS)} (the latest '
                         f'ROS time), got {text!r}')
    return time_ns
