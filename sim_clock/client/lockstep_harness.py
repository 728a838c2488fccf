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
Lockstep testing: a clock server of its own, the nodes under test, and frame-by-frame steps.

The ``sim_clock`` pytest fixture (sim_clock.client.pytest_plugin) yields a
:class:`LockstepHarness`; it can be used without pytest too::

    with LockstepHarness(time_step=0.01) as harness:
        node = harness.create_node('my_node')       # use_sim_time, on the harness' executor
        harness.step(10)                            # 10 frames; node callbacks due have run
        assert node.get_clock().now().nanoseconds == 100_000_000

The clock server runs as a separate process on a DDS domain of its own (loopback only), so tests
never see each other's time. :meth:`LockstepHarness.step` returns after the new time has
reached every node of the harness and every callback that became ready has run.
"""

import os
import signal
import subprocess
import tempfile
import time
from typing import Callable
from typing import Optional

from ament_index_python.packages import get_package_prefix
import rclpy
from rclpy.clock import ClockType
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from sim_clock.client.api import SimClockClient
from sim_clock.client.api import SimClockTimeout
from sim_clock.client.api import StepResult
from sim_clock.client.deprecated_names import renamed
from sim_clock.client.deprecated_names import renamed_attribute
from sim_clock.client.domains import check_free
from sim_clock.client.domains import DOMAINS
from sim_clock.client.spinning import run_ready_callbacks


#: Seconds a harness waits for anything before it fails (``timeout_sec``).
DEFAULT_TIMEOUT_SEC = 10.0


def parameter_arguments(parameters: dict) -> list:
    """Return ``-p name:=value`` ROS arguments for node parameters (floats exact, bools ROS)."""
    arguments = []
    for name, value in parameters.items():
        if isinstance(value, bool):
            text = 'true' if value else 'false'
        else:
            text = repr(value) if isinstance(value, float) else str(value)
        arguments += ['-p', f'{name}:={text}']
    return arguments


class LockstepHarness:
    """
    A sim_clock server in sync mode, held by this harness, and an executor for nodes under test.

    :param parameters: clock server parameters (``time_step`` in seconds, ...); ``mode`` and
        ``sync`` default to simulation with sync on.
    :param domain_id: the DDS domain; None takes the next one that no DDS participant of this
        host is on (``DOMAINS``). One given is checked first: if a participant of this host is
        on it, :class:`~sim_clock.client.domains.DomainInUse` and nothing is started.
    :param log_dir: where the server's output goes; None: a temporary folder.
    :param timeout_sec: seconds any wait may take before it fails, naming what it waited for
        (``timeout`` before; that name still works, with a DeprecationWarning: it is never
        taken for a server parameter).
    """

    def __init__(self, domain_id: Optional[int] = None, log_dir: Optional[str] = None,
                 timeout_sec: float = DEFAULT_TIMEOUT_SEC, *, timeout: Optional[float] = None,
                 **parameters):
        timeout_sec = renamed(timeout_sec, timeout, 'timeout', 'timeout_sec')
        if domain_id is None:
            domain_id = DOMAINS.take()
        else:
            check_free(domain_id)
        self.domain_id = domain_id
        #: Seconds any wait may take before it fails.
        self.timeout_sec = timeout_sec
        parameters = {'mode': 'simulation', 'sync': True, **parameters}
        executable = os.path.join(
            get_package_prefix('sim_clock'), 'lib', 'sim_clock', 'clock_server')
        arguments = [executable, '--ros-args', *parameter_arguments(parameters)]
        log_dir = log_dir or tempfile.mkdtemp(prefix='sim_clock-')
        self.log_path = os.path.join(log_dir, 'clock_server.log')
        env = dict(os.environ, ROS_DOMAIN_ID=str(self.domain_id),
                   ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
        with open(self.log_path, 'w') as log:
            self.process = subprocess.Popen(
                arguments, env=env, stdout=log, stderr=subprocess.STDOUT)
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=self.domain_id)
        self.executor = SingleThreadedExecutor(context=self.context)
        self._nodes = []
        self.client = SimClockClient(context=self.context, timeout_sec=timeout_sec)
        try:
            self.client.acquire()
        except BaseException:
            # Refused (another server on the domain holds sync), timed out or interrupted:
            # the server started here stops with the harness that failed to come up.
            self.close()
            raise

    def __enter__(self) -> 'LockstepHarness':
        """Return the harness."""
        return self

    def __exit__(self, *exc_info) -> bool:
        """Stop the server and destroy the nodes."""
        self.close()
        return False

    # -- nodes under test ----------------------------------------------------------------------

    def create_node(self, name: str, **kwargs) -> Node:
        """Create a node with ``use_sim_time`` on the harness' domain and executor."""
        overrides = list(kwargs.pop('parameter_overrides', []))
        overrides.append(Parameter('use_sim_time', value=True))
        node = rclpy.create_node(
            name, context=self.context, parameter_overrides=overrides, **kwargs)
        self.add_node(node)
        return node

    def add_node(self, node: Node) -> None:
        """Let the harness spin ``node`` (created with ``context=harness.context``)."""
        self.executor.add_node(node)
        self._nodes.append(node)

    # -- time ----------------------------------------------------------------------------------

    def step(self, frames: int = 1) -> StepResult:
        """Advance ``frames`` frames; return once every node has the new time and is idle."""
        result = self.client.step(frames)
        self._settle(result.time_ns)
        return result

    def step_until(self, time_ns: int) -> StepResult:
        """Step to ``time_ns`` (or just past it); return once the nodes have it and are idle."""
        result = self.client.step_until(time_ns)
        self._settle(result.time_ns)
        return result

    def spin_until(self, condition: Callable[[], bool], what: str = 'the condition') -> None:
        """Spin the nodes until ``condition()`` holds; fail naming ``what`` after the timeout."""
        deadline = time.monotonic() + self.timeout_sec
        while not condition():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SimClockTimeout(f'timed out after {self.timeout_sec} s waiting for {what}')
            self.executor.spin_once(timeout_sec=min(remaining, 0.1))

    def _settle(self, time_ns: int) -> None:
        sim_nodes = [node for node in self._nodes
                     if node.get_clock().clock_type == ClockType.ROS_TIME
                     and node.get_clock().ros_time_is_active]
        self.spin_until(
            lambda: all(node.get_clock().now().nanoseconds >= time_ns for node in sim_nodes),
            f'every node to receive /clock at {time_ns} ns')
        # Run what the new time made ready (timers due, messages), until nothing is left.
        run_ready_callbacks(self.executor)

    timeout = renamed_attribute('timeout', 'timeout_sec')

    # -- teardown ------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the clock server (SIGINT), destroy the nodes and shut the context down."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(self.timeout_sec)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.client.close()
        for node in self._nodes:
            self.executor.remove_node(node)
            node.destroy_node()
        self._nodes.clear()
        self.executor.shutdown(timeout_sec=0)
        rclpy.try_shutdown(context=self.context)
