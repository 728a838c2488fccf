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
Old names of the client's arguments and attributes, kept working for one release.

The client follows rclpy's names (``timeout_sec``, ``period_sec``); a name it had before still
works, with a ``DeprecationWarning`` that names the new one. ``SimClockClient``, the
participant helper and ``LockstepHarness`` all take their old names through here.
"""

import warnings


def renamed(value, old_value, old: str, new: str, stacklevel: int = 3):
    """
    Return ``old_value`` where a caller gave ``old`` (and say it is deprecated), else ``value``.

    The client's arguments follow rclpy's names (``timeout_sec``); the old names keep working
    for one release, with a DeprecationWarning that names the new one.
    """
    if old_value is None:
        return value
    warnings.warn(f'{old}= is deprecated: use {new}=', DeprecationWarning, stacklevel=stacklevel)
    return old_value


def renamed_attribute(old: str, new: str) -> property:
    """
    Return a property ``old`` that reads and writes attribute ``new``, warning at each use.

    An attribute renamed to rclpy's name keeps its old name for one release, as an argument
    does (:func:`renamed`).
    """
    message = f'{old} is deprecated: use {new}'

    def get(self):
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return getattr(self, new)

    def set_(self, value) -> None:
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        setattr(self, new, value)

    return property(get, set_, doc=f'Deprecated: :attr:`{new}`.')
