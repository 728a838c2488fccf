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
One spin loop for the executables, the executor choice, and the Fast DDS settings.

Each setting is a function with a one-line reason and a link to doc/design.md, where its
history and figures are. rclpy's private API is in ``sim_clock.compat``.
"""

import os
import signal
from typing import Callable
from typing import Optional

import rclpy
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos_overriding_options import InvalidQosOverridesError
from rclpy.signals import SignalHandlerOptions
from rclpy.utilities import try_shutdown
from sim_clock.core.rules import Refused
from sim_clock.process.fastdds_profiles import answer_late_clients
from sim_clock.process.fastdds_profiles import fast_dds_major
from sim_clock.process.fastdds_profiles import GIVEN_PROFILES
from sim_clock.process.fastdds_profiles import LOOPBACK_PROFILE_FILES
from sim_clock.process.fastdds_profiles import PROFILES_VARIABLES
from sim_clock.process.stop_signals import hand_back_stop_signals
from sim_clock.process.stop_signals import STOP_SIGNALS

try:
    from rclpy.experimental import EventsExecutor
except ImportError:  # an rclpy without it
    EventsExecutor = None

#: The variable by which Fast DDS (2.13 and later) takes its transports, and our choice.
TRANSPORTS_VARIABLE = 'FASTDDS_BUILTIN_TRANSPORTS'
SAFE_TRANSPORTS = 'UDPv4'


def avoid_shared_memory(environ=os.environ) -> Optional[str]:
    """
    Make this process's Fast DDS use UDPv4 only where it can; return a line to log.

    Call before ``rclpy.init``. Why: a subscriber killed while taking a sample can freeze a
    Fast DDS 2.14 writer on shared memory (doc/design.md, "Fast DDS shared memory").
    Nothing changes when the variable is set already, for another middleware, or with a
    LOCALHOST discovery range (rmw_fastrtps then adds shared memory itself). None: not Fast DDS.
    """
    if not environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp').startswith('rmw_fastrtps'):
        return None
    if TRANSPORTS_VARIABLE in environ:
        return f'Fast DDS transports as set: {TRANSPORTS_VARIABLE}={environ[TRANSPORTS_VARIABLE]}'
    if (environ.get('ROS_AUTOMATIC_DISCOVERY_RANGE') == 'LOCALHOST'
            or environ.get('ROS_LOCALHOST_ONLY') == '1'):
        return ('Fast DDS shared memory on (rmw_fastrtps adds it for a LOCALHOST discovery '
                'range): a subscriber killed while taking a sample can freeze this process '
                '(eProsima/Fast-DDS#6485)')
    environ[TRANSPORTS_VARIABLE] = SAFE_TRANSPORTS
    return (f'Fast DDS over {SAFE_TRANSPORTS} only ({TRANSPORTS_VARIABLE}={SAFE_TRANSPORTS}): '
            'a subscriber that dies cannot freeze this process through shared memory '
            '(eProsima/Fast-DDS#6485); set the variable (DEFAULT) to choose otherwise')


def loopback_udp_only(environ=os.environ) -> Optional[str]:
    """
    Under a LOCALHOST discovery range, make Fast DDS use UDPv4 on 127.0.0.1 only; return a line.

    Call before ``rclpy.init`` (the recorder does). rmw_fastrtps puts shared memory under a
    LOCALHOST range itself; over Fast DDS 2.14 shared memory a recorder stopped receiving
    from the writers of some processes mid-run, for good (doc/bags.md, "The recorder over
    UDP"). So the range becomes SYSTEM_DEFAULT with :data:`LOOPBACK_PROFILE_FILES`, whose
    only transport is UDPv4 on 127.0.0.1: still this host only. Elsewhere, or where the user
    chose transports or a profiles file, :func:`avoid_shared_memory` decides.
    """
    if not environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp').startswith('rmw_fastrtps'):
        return None
    chosen = TRANSPORTS_VARIABLE in environ or any(
        environ.get(name) for name in PROFILES_VARIABLES.values())
    if (environ.get('ROS_AUTOMATIC_DISCOVERY_RANGE') != 'LOCALHOST' or chosen
            or environ.get('ROS_LOCALHOST_ONLY') == '1'):
        return avoid_shared_memory(environ)
    environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'SYSTEM_DEFAULT'
    major = fast_dds_major(environ)
    environ[PROFILES_VARIABLES[major]] = LOOPBACK_PROFILE_FILES[major]
    return (f'Fast DDS over UDPv4 on 127.0.0.1 only ({LOOPBACK_PROFILE_FILES[major]}, '
            'ROS_AUTOMATIC_DISCOVERY_RANGE=SYSTEM_DEFAULT): no shared memory, which lost '
            'writers mid-recording')


def make_executor():
    """
    Return rclpy's EventsExecutor where it exists, else a SingleThreadedExecutor.

    Chosen once, at start: it halves a step's latency and takes a third of the publish CPU,
    and the frame engine needs no coroutine support from it (steps answer through deferred
    replies). Callers use ``spin_once``: its ``spin()`` busy-loops (doc/design.md, "Executors").
    """
    if EventsExecutor is not None:
        return EventsExecutor()
    return SingleThreadedExecutor()


#: The longest the spin loop waits for an event, in s: a signal is seen between two waits.
SIGNAL_LATENCY_S = 0.1


def spin_until_stopped(make_node: Callable[[], Node], args=None, *, logger_name: str,
                       executor_factory: Callable[[], object] = make_executor,
                       transports: Optional[Callable[[], Optional[str]]] = None) -> int:
    """
    Init rclpy, make the node and spin it until it is done, Ctrl-C or SIGTERM; return 0 or 1.

    The node may define ``spin_once(executor)`` (one round of its loop, which may return the
    executor to spin from then on, and waits SIGNAL_LATENCY_S at most; default: wait that long
    for an event), ``done`` (end the loop), ``stop()`` (called from the signal handler: it
    notes that the process stops, so that a callback waiting for something cuts the wait
    short) and ``finish(executor)`` (run once the loop ended, whatever ended it, before the
    node is destroyed). An invalid configuration (a refused parameter) ends it at once with a
    FATAL line and 1. ``transports``: what chooses Fast DDS's transports before ``rclpy.init``
    (default :func:`avoid_shared_memory`; the recorder's :func:`loopback_udp_only`).

    SIGINT and SIGTERM are taken here, not by rclpy: rclpy's handler shuts the context down
    from a thread of its own, under a callback that may be publishing, which then fails (a
    FATAL line from the executor). Here the signal ends the loop between two callbacks, and
    the context is shut down after the node is destroyed (doc/design.md, "Ctrl-C"). Once a
    signal came, further ones are ignored until the process exits.
    """
    stopped = []
    node = executor = None

    def on_signal(signum, frame):
        stopped.append(signum)
        stop = getattr(node, 'stop', None)
        if stop is not None:
            stop()
    # Installed before rclpy.init: a signal while the node is made ends the process quietly too.
    previous = {number: signal.signal(number, on_signal) for number in STOP_SIGNALS}
    transports = (transports or avoid_shared_memory)()
    profile = answer_late_clients()
    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
        if stopped:
            return 0
        try:
            node = make_node()
        except (Refused, ParameterException, InvalidQosOverridesError) as error:
            rclpy.logging.get_logger(logger_name).fatal(f'invalid configuration: {error}')
            return 1
        for line in (transports, profile):
            if line is not None:
                # Someone else's profile changes how steps are paced: said where people look.
                log = (node.get_logger().info if line.startswith(GIVEN_PROFILES)
                       else node.get_logger().debug)
                log(line)
        executor = executor_factory()
        executor.add_node(node)
        spin_once = getattr(node, 'spin_once', None) or (
            lambda executor: executor.spin_once(timeout_sec=SIGNAL_LATENCY_S))
        while not stopped and rclpy.ok() and not getattr(node, 'done', False):
            executor = spin_once(executor) or executor
    except ExternalShutdownException:
        pass  # the context was shut down by other code than this (rclpy.shutdown)
    finally:
        if node is not None:
            finish = getattr(node, 'finish', None)
            if finish is not None:
                finish(executor)
            node.destroy_node()
        # The context alone: rclpy installed no handler here, so it has none to take out.
        # Kilted's rclpy.try_shutdown takes them out all the same, putting back an "original"
        # it never saved, SIG_DFL, between two sigaction calls: a second Ctrl-C there killed
        # the process (exit code -2). rclpy.utilities' try_shutdown, the same on Jazzy and
        # Kilted, shuts the default context down and nothing else.
        try_shutdown()
        # After a signal, SIGINT and SIGTERM stay ignored: launch's own SIGINT after the
        # terminal's would find the handlers of before on the way out.
        hand_back_stop_signals(previous, bool(stopped))
    return 0
