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
The Fast DDS profiles of the sim_clock processes: which file, and when it is loaded.

The executables (``sim_clock.node.runtime``) and ``simclock`` (``sim_clock.client.cli``) load
the same profile unless the user gave one: answers that wait for a new client, prompt
acknowledgements, and on Fast DDS 3 no type lookup service (doc/design.md, "Fast DDS type
lookup"). The files are in ``sim_clock/node``; this module imports no rclpy.
"""

import contextlib
import importlib.metadata
import os
from typing import Optional
from typing import Tuple

#: Where Fast DDS 2 and 3 take an XML profiles file from (2 reads the first; 3 reads the second
#: and warns that the first is deprecated), and ours for each: they spell one element apart.
PROFILES_VARIABLES = {2: 'FASTRTPS_DEFAULT_PROFILES_FILE', 3: 'FASTDDS_DEFAULT_PROFILES_FILE'}
#: The folder of the profiles files.
PROFILES_FOLDER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'node')
PROFILE_FILES = {major: os.path.join(PROFILES_FOLDER, f'fastdds{major}_profile.xml')
                 for major in PROFILES_VARIABLES}
#: The recorder's under a LOCALHOST discovery range: the same over UDPv4 on 127.0.0.1 only.
LOOPBACK_PROFILE_FILES = {
    major: os.path.join(PROFILES_FOLDER, f'fastdds{major}_loopback_profile.xml')
    for major in PROFILES_VARIABLES}
#: How the line of :func:`answer_late_clients` starts where a profiles file was given.
GIVEN_PROFILES = 'Fast DDS profiles as set'
#: The ROS distributions on Fast DDS 2; later ones are on Fast DDS 3.
FAST_DDS_2_DISTROS = ('humble', 'iron', 'jazzy')


def fast_dds_major(environ=os.environ) -> int:
    """
    Return the major version of Fast DDS here: 2 or 3.

    From ROS_DISTRO where a setup file set it (apt, colcon), else from the installed wheels
    (ros-fastrtps is Fast DDS 2, ros-fastdds is 3), else 2.
    """
    distro = environ.get('ROS_DISTRO')
    if distro:
        return 2 if distro in FAST_DDS_2_DISTROS else 3
    try:
        importlib.metadata.version('ros-fastdds')
    except importlib.metadata.PackageNotFoundError:
        return 2
    return 3


def answer_late_clients(environ=os.environ) -> Optional[str]:
    """
    Load our Fast DDS profile unless a profiles file is given; return a line to log.

    Call before ``rclpy.init``. The profile lets services wait up to 2 s for a new client's
    reader (Fast DDS drops the answer after 100 ms) and writers ask for acknowledgements every
    1 ms (doc/design.md, "Services", "Acknowledged steps").
    """
    if not _on_fast_dds(environ):
        return None
    given = _given_profiles(environ)
    if given and given[1] in LOOPBACK_PROFILE_FILES.values():
        return (f'Fast DDS profile {given[1]}: UDPv4 on 127.0.0.1 only; answers wait '
                'up to 2 s for a new client; acknowledgements asked for every 1 ms')
    if given:
        return (f'{GIVEN_PROFILES}: {given[0]}={given[1]}, not the one of sim_clock: '
                'steps held for readers (flow control, ack_timeout) wait up to one '
                'heartbeat period of that file per 500 frames (3 s by default in Fast DDS, '
                '1 ms in ours; doc/modes-and-services.md, "No loss within steps")')
    major = fast_dds_major(environ)
    environ[PROFILES_VARIABLES[major]] = PROFILE_FILES[major]
    return (f'Fast DDS profile {PROFILE_FILES[major]}: answers wait up to 2 s for a new '
            'client; acknowledgements asked for every 1 ms')


def profile_is_ours(environ=os.environ) -> bool:
    """
    Whether this process's Fast DDS runs on one of our profiles: writers with a 1 ms heartbeat.

    As :func:`answer_late_clients` or ``runtime.loopback_udp_only`` set it. False on another
    middleware, or where the user gave a profiles file of their own.
    """
    given = _given_profiles(environ)
    return (_on_fast_dds(environ) and given is not None
            and given[1] in {*PROFILE_FILES.values(), *LOOPBACK_PROFILE_FILES.values()})


def _on_fast_dds(environ) -> bool:
    """Whether this process's middleware is Fast DDS (rmw_fastrtps, the default)."""
    return environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp').startswith('rmw_fastrtps')


def _given_profiles(environ) -> Optional[Tuple[str, str]]:
    """Return the first profiles variable set and its file, or None: what Fast DDS loads."""
    for name in PROFILES_VARIABLES.values():
        if environ.get(name):
            return name, environ[name]
    return None


@contextlib.contextmanager
def our_profile_meanwhile(environ=os.environ):
    """
    Within: the environment names our Fast DDS profile, as :func:`answer_late_clients` sets it.

    After: the environment as it was. For a process whose participant is made inside a library
    call (``simclock``, run by its executable, by ``ros2 simclock`` or by a test): Fast DDS
    reads the variable when it makes the process's first participant, and neither the
    process's children nor its later code see the change.
    """
    saved = {name: environ.get(name) for name in PROFILES_VARIABLES.values()}
    answer_late_clients(environ)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                environ.pop(name, None)
            else:
                environ[name] = value
