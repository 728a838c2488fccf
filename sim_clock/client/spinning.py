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

"""What the participant helper asks of an rclpy executor: timers due, ready callbacks, signals."""

import contextlib
import signal
import threading

from rclpy import signals
from rclpy.clock import ClockType
from rclpy.event_handler import EventHandler
from rclpy.executors import TimeoutException
from sim_clock.process.stop_signals import hand_back_stop_signals
from sim_clock.process.stop_signals import STOP_SIGNALS


def sim_timers(executor):
    """Yield each running ``use_sim_time`` timer of ``executor``'s nodes and its ns to go."""
    for node in executor.get_nodes():
        for timer in node.timers:
            clock = timer.clock
            if clock.clock_type is not ClockType.ROS_TIME or not clock.ros_time_is_active:
                continue
            remaining = timer.time_until_next_call()
            if remaining is not None and not timer.is_canceled():
                yield timer, remaining


def next_timer_ns(executor) -> int:
    """
    Return the ROS time at which the next ``use_sim_time`` timer of ``executor``'s nodes is due.

    0 when no node has one running.
    """
    return min((timer.clock.now().nanoseconds + max(remaining, 0)
                for timer, remaining in sim_timers(executor)), default=0)


def due_timers(executor) -> list:
    """Return the ``use_sim_time`` timers of ``executor``'s nodes due now, in node order."""
    return [timer for timer, remaining in sim_timers(executor) if remaining <= 0]


def run_ready_callbacks(executor) -> None:
    """Run every callback of ``executor`` ready now (timers due, messages), until none is."""
    while True:
        try:
            handler, _, _ = executor.wait_for_ready_callbacks(timeout_sec=0)
        except TimeoutException:
            return
        handler()
        if handler.exception() is not None:
            raise handler.exception()


def own_waitables(nodes) -> bool:
    """Whether ``nodes`` have waitables besides the QoS event handlers every node has."""
    return any(not isinstance(waitable, EventHandler)
               for node in nodes for waitable in node.waitables)


@contextlib.contextmanager
def signals_noted():
    """
    Note SIGINT and SIGTERM in the list yielded, in place of rclpy's handlers, then restore.

    Once one came, the process is on its way out: SIGINT and SIGTERM are then ignored to the
    end, as in the executables (``sim_clock.process.stop_signals``), in place of the handlers of
    before, and rclpy's come back over that. Only in the main thread, the one Python runs
    signal handlers in; elsewhere rclpy's handlers stay and the list stays empty.
    """
    received = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    options = signals.get_current_signal_handlers_options()
    if options != signals.SignalHandlerOptions.NO:
        # Only handlers rclpy installed are taken out: with none, Kilted's rclpy would put
        # back an "original" it never saved, SIG_DFL, between two sigaction calls, and a
        # signal then would kill the process.
        signals.uninstall_signal_handlers()
    previous = {number: signal.signal(number, lambda signum, frame: received.append(signum))
                for number in STOP_SIGNALS}
    try:
        yield received
    finally:
        hand_back_stop_signals(previous, bool(received))
        # rclpy's handlers, where it had some, chain to what is in place now.
        signals.install_signal_handlers(options)
