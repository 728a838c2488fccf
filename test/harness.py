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
A clock server in its own process and a test client node on the same DDS domain.

Waits are event-driven: the client spins its executor until a condition holds, and fails with
what it waited for when the timeout passes.
"""

import os
import select
import signal
import subprocess
import sys
import time
from typing import Callable
import weakref

from ament_index_python.packages import get_package_prefix
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.srv import DescribeParameters
from rcl_interfaces.srv import GetParameters
from rcl_interfaces.srv import SetParameters
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sim_clock.srv import GetStatus
from sim_clock.srv import Step
from sim_clock.srv import SyncModeCmd
from sim_clock.testing import parameter_arguments
from std_srvs.srv import SetBool
from std_srvs.srv import Trigger

NS = 1_000_000_000
#: Our service clients keep 1000 responses, as the server's services do (SERVICE_QOS there):
#: every client of a service receives every response of that service and keeps its own, so
#: with the default depth of 10 a busy client can lose its answer among other clients' ones.
SERVICE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                         reliability=ReliabilityPolicy.RELIABLE)
SERVER = '/sim_clock'
#: The test folder (harness, bag writers, profiles) and the repository.
TEST_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TEST_DIR)
TIMEOUT = 15.0

#: The environment of a test process that will be SIGKILLed: Fast DDS over UDP on 127.0.0.1,
#: no shared memory. A process SIGKILLed on shared memory (what rmw_fastrtps installs for a
#: LOCALHOST discovery range) leaves its port segment and lock files in /dev/shm; the next
#: process of that domain with the same participant id gets the same port, and a writer can
#: then fail to deliver to it for good, or freeze (eProsima/Fast-DDS#6485, #5469, #5053;
#: doc/reliability.md, "Shared memory and killed processes").
UDP_LOOPBACK_ENV = {
    'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SYSTEM_DEFAULT',
    'FASTRTPS_DEFAULT_PROFILES_FILE': os.path.join(TEST_DIR, 'loopback_udp_only.xml'),
}


def soak(suite: int, full: int) -> int:
    """
    Return how many runs a statistical test makes: ``suite`` in the suite, ``full`` in a soak.

    The suite keeps the smallest run that shows the behaviour; ``scripts/soak.sh`` (pytest
    ``--soak``) runs the tests marked ``soak`` at the counts the docs quote.
    """
    return full if os.environ.get('SIM_CLOCK_SOAK') else suite


def server_executable() -> str:
    """Return the installed clock_server launcher."""
    return os.path.join(get_package_prefix('sim_clock'), 'lib', 'sim_clock', 'clock_server')


def executable(name: str) -> str:
    """Return an installed sim_clock executable: bag_player, recorder."""
    return os.path.join(get_package_prefix('sim_clock'), 'lib', 'sim_clock', name)


class ServerProcess:
    """A clock_server process on a given domain, its output in a log file."""

    def __init__(self, domain_id: int, log_dir: str, params: dict = None, argv=(),
                 executable: str = None, env: dict = None, cwd: str = None):
        args = [executable or server_executable(), *argv, '--ros-args',
                *parameter_arguments(params or {})]
        self.log_path = os.path.join(log_dir, f'server-{time.monotonic_ns()}.log')
        self._log = open(self.log_path, 'w')
        full_env = dict(os.environ, ROS_DOMAIN_ID=str(domain_id))
        full_env.update(env or {})
        self.process = subprocess.Popen(
            args, env=full_env, stdout=self._log, stderr=subprocess.STDOUT, cwd=cwd)

    def stop(self, sig=signal.SIGINT, timeout: float = TIMEOUT) -> int:
        """Send ``sig`` and return the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise AssertionError(f'server ignored {sig!r} for {timeout} s:\n{self.log()}')
        self._log.close()
        return self.process.returncode

    def log(self) -> str:
        """Return what the server printed so far."""
        if not self._log.closed:
            self._log.flush()
        with open(self.log_path) as log:
            return log.read()


class TestClient:
    """An rclpy node of its own context that calls the server and records /clock."""

    __test__ = False  # not a pytest class

    def __init__(self, domain_id: int, server: str = SERVER, name: str = 'test_client',
                 subscribe_clock: bool = True):
        self.server = server
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.clocks = []  # (monotonic ns at reception, simulated ns), in arrival order
        #: per message of ``clocks``, the publisher's wall time (ns) when it published it
        self.clock_sources = []
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100_000,
                         reliability=ReliabilityPolicy.RELIABLE)
        if subscribe_clock:
            self.node.create_subscription(Clock, '/clock', self._on_clock, qos)
        self._clients = {}

    def _on_clock(self, msg, info) -> None:
        self.clocks.append((time.monotonic_ns(), msg.clock.sec * NS + msg.clock.nanosec))
        self.clock_sources.append(info['source_timestamp'])

    def close(self) -> None:
        """Destroy the node and shut the context down."""
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)

    # -- waiting -------------------------------------------------------------------------------

    def spin_until(self, condition: Callable[[], bool], what: str,
                   timeout: float = TIMEOUT) -> None:
        """Spin until ``condition()`` holds; fail naming ``what`` after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f'timed out after {timeout} s waiting for {what}')
            self.executor.spin_once(timeout_sec=0.05)

    def times(self) -> list:
        """Return the simulated times received, in arrival order."""
        return [sim for _, sim in self.clocks]

    def distinct_times(self) -> list:
        """Return the received times with consecutive repeats (idle republishing) removed."""
        distinct = []
        for sim in self.times():
            if not distinct or sim != distinct[-1]:
                distinct.append(sim)
        return distinct

    def distinct_times_since_reset(self) -> list:
        """Return the distinct times from the last time zero on (the last reset)."""
        distinct = self.distinct_times()
        last_zero = len(distinct) - 1 - distinct[::-1].index(0) if 0 in distinct else 0
        return distinct[last_zero:]

    def wait_for_clock(self, condition: Callable[[int], bool] = lambda t: True,
                       what: str = 'a /clock message', timeout: float = TIMEOUT) -> int:
        """Wait for a /clock message (after those already seen) whose time meets condition."""
        return self._wait_for_a_time(condition, len(self.clocks), what, timeout)

    def wait_for_time(self, time_ns: int, timeout: float = TIMEOUT) -> None:
        """Wait until /clock carrying ``time_ns`` has been received (at any point)."""
        self._wait_for_a_time(lambda sim: sim == time_ns, 0, f'/clock at {time_ns} ns', timeout)

    def _wait_for_a_time(self, condition: Callable[[int], bool], start: int, what: str,
                         timeout: float) -> int:
        """
        Spin until a /clock message from the ``start``-th on meets ``condition``; return its time.

        Each message is looked at once, as it comes. Looking over the whole list after every
        message costs 7 s of CPU over a step of 10^4 frames; at a load average of 10 a test's
        reader had taken 5,503 of them 60 s after the server had published them all.
        """
        found, looked = [], start

        def seen() -> bool:
            nonlocal looked
            clocks = self.clocks
            for index in range(looked, len(clocks)):
                if condition(clocks[index][1]):
                    found.append(clocks[index][1])
                    return True
            looked = len(clocks)
            return False
        self.spin_until(seen, what, timeout)
        return found[0]

    # -- calling -------------------------------------------------------------------------------

    def client_for(self, srv_type, name: str):
        """
        Return the client of ``<server>/<name>``, made on first use.

        Made before the first call of another service, it is matched by the server once that
        call is answered: the server learns of this node's writers in the order they were
        made. So a request that changes something, not to be asked twice, is not lost.
        """
        full_name = f'{self.server}/{name}'
        client = self._clients.get(full_name)
        if client is None:
            client = self.node.create_client(srv_type, full_name, qos_profile=SERVICE_QOS)
            self._clients[full_name] = client
        return client

    def call(self, srv_type, name: str, request=None, timeout: float = TIMEOUT):
        """Call ``<server>/<name>`` and return the response."""
        full_name = f'{self.server}/{name}'
        client = self.client_for(srv_type, name)
        self.spin_until(client.service_is_ready, f'service {full_name}', timeout)
        future = client.call_async(srv_type.Request() if request is None else request)
        self.spin_until(future.done, f'the response of {full_name}', timeout)
        return future.result()

    def call_idempotent(self, srv_type, name: str, request=None, timeout: float = TIMEOUT,
                        attempt: float = 3.0):
        """
        Call a service whose second call changes nothing more; ask again if no answer comes.

        An answer can be lost at start: the server may answer before its response writer has
        matched this client's response reader (``service_is_ready()`` only says that the
        request side matched). The first answer that comes is returned.
        """
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.call(srv_type, name, request,
                                 timeout=max(min(attempt, deadline - time.monotonic()), 0.1))
            except AssertionError:
                if time.monotonic() >= deadline:
                    raise

    def status(self):
        """Return the server's GetStatus response (asked again if an answer is lost)."""
        return self.call_idempotent(GetStatus, 'get_status')

    def status_when_ready(self, timeout: float = 60.0, attempt: float = 3.0):
        """Return the server's GetStatus response, asking again every ``attempt`` s until then."""
        return self.call_idempotent(GetStatus, 'get_status', timeout=timeout, attempt=attempt)

    def step(self, user_id: str = '', steps: int = 1):
        """Call ~/step."""
        return self.call(Step, 'step', Step.Request(user_id=user_id, steps=steps))

    def sync_mode_cmd(self, user_id: str = '', start: bool = True, time_step_ms: int = 0):
        """Call ~/sync_mode_cmd."""
        return self.call(SyncModeCmd, 'sync_mode_cmd', SyncModeCmd.Request(
            user_id=user_id, start_sync_mode=start, time_step=time_step_ms))

    def trigger(self, name: str):
        """Call a std_srvs/Trigger service: step_once, pause, resume or reset."""
        return self.call(Trigger, name)

    def set_sync(self, data: bool):
        """Call ~/set_sync."""
        return self.call(SetBool, 'set_sync', SetBool.Request(data=data))

    def set_parameter(self, name: str, value):
        """Set one parameter as `ros2 param set` does; return the SetParametersResult."""
        msg = Parameter(name, value=value).to_parameter_msg()
        response = self.call_idempotent(SetParameters, 'set_parameters',
                                        SetParameters.Request(parameters=[msg]))
        return response.results[0]

    def set_parameter_msg(self, msg: ParameterMsg):
        """Set one parameter from a raw message (any type); return the SetParametersResult."""
        response = self.call_idempotent(SetParameters, 'set_parameters',
                                        SetParameters.Request(parameters=[msg]))
        return response.results[0]

    def get_parameter(self, name: str):
        """Return a parameter's value as the server holds it."""
        response = self.call_idempotent(GetParameters, 'get_parameters',
                                        GetParameters.Request(names=[name]))
        return Parameter.from_parameter_msg(
            ParameterMsg(name=name, value=response.values[0])).value

    def describe_parameter(self, name: str):
        """Return a parameter's descriptor."""
        response = self.call_idempotent(DescribeParameters, 'describe_parameters',
                                        DescribeParameters.Request(names=[name]))
        return response.descriptors[0]


def status_tuple(status) -> tuple:
    """Return the fields of a GetStatus response that describe the state."""
    return (status.mode, status.sync, status.paused, status.frame,
            status.clock.sec * NS + status.clock.nanosec, status.epoch, status.owner,
            status.real_time_factor, status.time_step_ns, status.publish_rate)


def stamp_ns(stamp) -> int:
    """Return a builtin_interfaces/Time as integer nanoseconds."""
    return stamp.sec * NS + stamp.nanosec


def flood_with_sigints(process: subprocess.Popen, pause: float = 0.0,
                       timeout: float = TIMEOUT) -> int:
    """
    Send SIGINT to ``process`` until it ends, ``timeout`` s at most, ``pause`` s apart.

    Return how many were sent. A process that leaves its handler for a moment on its way
    out (SIG_DFL, or one that raises KeyboardInterrupt) is found there.
    """
    deadline = time.monotonic() + timeout
    sent = 0
    while process.poll() is None and time.monotonic() < deadline:
        try:
            os.kill(process.pid, signal.SIGINT)
        except ProcessLookupError:
            break  # it has ended
        sent += 1
        if pause:
            time.sleep(pause)
    return sent


class ChildDidNotEnd(AssertionError):
    """A child that was to end by itself had not after the timeout; it was killed."""


#: Every child started, until it is gone: a test that failed before stopping its children has
#: them killed when it ends (conftest.py), rather than left running beside later tests.
LIVE_CHILDREN = weakref.WeakSet()


def kill_children() -> int:
    """Kill every child still running; return how many."""
    killed = 0
    for child in list(LIVE_CHILDREN):
        if child.process.poll() is None:
            child.process.kill()
            child.process.wait()
            killed += 1
    return killed


class ChildProcess:
    """
    A Python script in a process of its own on a DDS domain, talking through stdin and stdout.

    The script can import this module (``from harness import TestClient``). Lines it prints
    are read with a timeout, so a test waits for what a child says, never for a fixed time.
    A script that ends on its own closes its client last, so that the executor, node and
    context are torn down in that order rather than by the interpreter's exit, in any order.
    """

    def __init__(self, domain_id: int, script: str, cwd: str, args=(), env: dict = None,
                 prefix=()):
        self._start([*prefix, sys.executable, '-c', script, *map(str, args)], domain_id, cwd,
                    {'PYTHONPATH': TEST_DIR, **(env or {})})

    def _start(self, argv, domain_id: int, cwd: str, env: dict) -> None:
        """Start ``argv`` on the domain with ``env`` over this process's environment."""
        full_env = dict(os.environ, ROS_DOMAIN_ID=str(domain_id))
        full_env.update(env)
        self.process = subprocess.Popen(
            argv, env=full_env, cwd=cwd,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.lines = []
        self._pending = b''
        LIVE_CHILDREN.add(self)

    @property
    def pid(self) -> int:
        """Return the process id."""
        return self.process.pid

    def read_line(self, timeout: float = TIMEOUT) -> str:
        """Return the next line the child prints; fail after ``timeout`` s or at its end."""
        deadline = time.monotonic() + timeout
        fd = self.process.stdout.fileno()
        while b'\n' not in self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(
                    f'child {self.pid} printed no line for {timeout} s; so far:\n'
                    + self.output())
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                # os.read, not readline: a buffered reader would hide lines from select.
                chunk = os.read(fd, 65536)
                if not chunk:
                    self.process.wait(TIMEOUT)
                    raise AssertionError(
                        f'child {self.pid} ended (code {self.process.returncode}); it printed:'
                        '\n' + self.output())
                self._pending += chunk
        line, self._pending = self._pending.split(b'\n', 1)
        text = line.decode(errors='replace')
        self.lines.append(text + '\n')
        return text

    def printed_by_now(self) -> list:
        """
        Return the lines the child has printed so far and not read yet, without waiting.

        What a child wrote before an event the test saw (a step's answer that waited for the
        child) is in the pipe by then: this tells what it had done at that moment.
        """
        fd = self.process.stdout.fileno()
        while select.select([fd], [], [], 0)[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            self._pending += chunk
        *lines, self._pending = self._pending.split(b'\n')
        texts = [line.decode(errors='replace') for line in lines]
        self.lines.extend(text + '\n' for text in texts)
        return texts

    def expect(self, prefix: str, timeout: float = TIMEOUT) -> str:
        """Read lines until one starts with ``prefix``; return the rest of it."""
        while True:
            line = self.read_line(timeout)
            if line.startswith(prefix):
                return line[len(prefix):].strip()

    def send(self, line: str) -> None:
        """Write a line to the child's stdin."""
        self.process.stdin.write(line.encode() + b'\n')
        self.process.stdin.flush()

    def stop(self, timeout: float = TIMEOUT) -> None:
        """
        End the child as Ctrl-C does, so that its DDS participants leave; reap it.

        SIGINT (and SIGCONT, for a child a test stopped); SIGKILL only if it has not ended
        after ``timeout`` s. A child SIGKILLed on shared memory leaves its Fast DDS port to
        the next process of that domain and participant id, which then may never receive
        (see :data:`UDP_LOOPBACK_ENV`).
        """
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process.wait(TIMEOUT)
        if not self.process.stdout.closed:  # keep what it printed last (it has ended)
            self._pending += self.process.stdout.read()
        self.close_pipes()

    def kill(self) -> None:
        """SIGKILL the child and reap it: a crash; start such a child with UDP_LOOPBACK_ENV."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(TIMEOUT)
        self.close_pipes()

    def finish(self, timeout: float = TIMEOUT) -> int:
        """Close stdin, wait for the child to end and return its exit code."""
        try:
            rest, _ = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stacks = self._stacks()
            self.kill()
            raise ChildDidNotEnd(f'child {self.pid} did not end in {timeout} s:\n'
                                 + ''.join(self.lines) + stacks) from None
        self.lines.append((self._pending + (rest or b'')).decode(errors='replace'))
        self._pending = b''
        return self.process.returncode

    def _stacks(self, quiet: float = 1.0) -> str:
        """
        Return what a running child prints of its threads' Python stacks on SIGUSR1.

        Every child imports ``sitecustomize`` from this folder, which registers that signal.
        """
        self.process.send_signal(signal.SIGUSR1)
        fd = self.process.stdout.fileno()
        # The dump has no end mark: read until the child has printed nothing for ``quiet`` s.
        while select.select([fd], [], [], quiet)[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            self._pending += chunk
        text, self._pending = self._pending.decode(errors='replace'), b''
        return '\nits threads when it was killed:\n' + text

    def close_pipes(self) -> None:
        """Close the pipes to a child that has ended."""
        for pipe in (self.process.stdin, self.process.stdout):
            try:
                pipe.close()
            except BrokenPipeError:
                pass

    def output(self) -> str:
        """Return what the child printed so far."""
        return ''.join(self.lines) + self._pending.decode(errors='replace')


class ProgramProcess(ChildProcess):
    """A program of its own (a C executable, not a Python script), read as a child script is."""

    def __init__(self, domain_id: int, cwd: str, argv, env: dict = None):
        self._start(list(argv), domain_id, cwd, env or {})


def rss_kib(pid: int) -> int:
    """Return a process's resident set size (VmRSS) in KiB."""
    with open(f'/proc/{pid}/status') as status:
        for line in status:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    raise AssertionError(f'no VmRSS for process {pid}')


#: A reliable /clock reader in a process of its own, which the test freezes with SIGSTOP. It is
#: ready once it has received a /clock: the server's writer has matched it then.
FROZEN_READER = """
import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
rclpy.init()
node = rclpy.create_node('frozen_reader')
received = []
node.create_subscription(Clock, '/clock', received.append,
                         QoSProfile(depth=100000, reliability=ReliabilityPolicy.RELIABLE))
while rclpy.ok() and not received:
    rclpy.spin_once(node, timeout_sec=0.1)
print('ready', flush=True)
try:
    while rclpy.ok():
        rclpy.spin_once(node, timeout_sec=0.1)
except KeyboardInterrupt:
    pass
"""
