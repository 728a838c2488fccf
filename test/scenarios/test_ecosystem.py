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

"""The handles users reach for: client API, command line, pytest fixture, examples, diagnostics."""

import bisect
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import warnings

from ament_index_python.packages import get_package_prefix
from diagnostic_msgs.msg import DiagnosticArray
from harness import NS
from harness import ROOT
import pytest
import rclpy
from rclpy.clock import Clock
from rclpy.clock import ClockType
from rclpy.parameter import Parameter
from sim_clock.client import SimClockClient
from sim_clock.client import SimClockClosed
from sim_clock.client import SimClockRefused
from sim_clock.client import SimClockTimeout

pytestmark = pytest.mark.process

EXAMPLES = os.path.join(ROOT, 'examples')
#: Colours of a terminal log line.
ANSI = re.compile(r'\x1b\[[0-9;]*m')
#: A log line of Fast DDS itself (colours removed): its time, then its category and level.
FAST_DDS_LOG = re.compile(r'^\d{4}-\d\d-\d\d [\d:.]+ \[\w+ (Error|Warning|Info)\]')
MS = 1_000_000


@pytest.fixture
def sim_client(client):
    """Return a SimClockClient on the test client's context."""
    sim = SimClockClient(client.node, timeout_sec=15.0)
    yield sim
    sim.close()


# -- client API ------------------------------------------------------------------------------

def test_sync_mode_holds_for_a_block_and_puts_back_what_it_found(start_server, client):
    """
    ``with clock.sync_mode()`` takes sync mode, steps return frame and time, its end releases.

    And puts back the time_step it found (the server's 10 ms, not the block's 2 ms); the
    client stays open for more calls until its own ``with`` closes it.
    """
    start_server()
    with warnings.catch_warnings():
        warnings.simplefilter('error', DeprecationWarning)  # the new way warns of nothing
        with SimClockClient(client.node, timeout_sec=15.0) as sim:
            assert client.status().owner == ''  # owning the client takes no sync mode
            with sim.sync_mode(time_step=0.002) as held:
                assert held is sim
                assert client.status().owner == sim.user_id != ''
                first = sim.step()
                assert (first.frame, first.time_ns) == (1, 2 * MS)
                assert sim.step(9).time_ns == 20 * MS
                reached = sim.step_until(NS)
                assert (reached.frame, reached.time_ns) == (500, NS)
                status = sim.status()
                assert (status.sync, status.frame, status.time_step_ns) == (True, 500, 2 * MS)
            status = sim.status()
            assert (status.sync, status.owner, status.time_step_ns) == (False, '', 10 * MS)
        with pytest.raises(SimClockClosed):
            sim.status()


def test_sync_mode_releases_when_the_block_raises(start_server, client):
    """An exception inside the block still gives sync mode back, and is not hidden."""
    start_server()
    with pytest.raises(KeyError):
        with SimClockClient(client.node, user_id='crashy', timeout_sec=15.0) as sim:
            with sim.sync_mode():
                sim.step()
                raise KeyError('in the user code')
    assert client.status().owner == ''


@pytest.mark.parametrize('time_step', [None, 0.002], ids=['first-step', 'time_step-given'])
def test_a_with_block_that_relied_on_taking_sync_mode_still_works_with_a_warning(
        start_server, client, time_step):
    """
    Deprecated: ``with SimClockClient()`` took sync mode; a block written for that still works.

    Made with ``time_step=`` it takes sync mode on entry; else at the first step, the server's
    sync being off. Each way says so with a DeprecationWarning, and the block's end gives sync
    mode back and puts back the time_step it found.
    """
    start_server()
    with pytest.warns(DeprecationWarning) as warned:
        with SimClockClient(client.node, timeout_sec=15.0, time_step=time_step) as sim:
            assert sim.step().frame == 1
            assert client.status().owner == sim.user_id != ''
    assert any('sync_mode(' in str(w.message) for w in warned)
    status = client.status()
    assert (status.sync, status.owner, status.time_step_ns) == (False, '', 10 * MS)


def test_client_refusal_names_the_holder(start_server, client, sim_client):
    """A refused acquire raises SimClockRefused naming the holder; nothing changes."""
    start_server()
    client.status_when_ready()  # answering first: sync_mode_cmd is not asked twice
    assert client.sync_mode_cmd('holder', True, 0).result
    with pytest.raises(SimClockRefused, match='holder') as refused:
        sim_client.acquire()
    assert refused.value.holder == 'holder'
    with pytest.raises(SimClockRefused, match="held by 'holder'"):
        sim_client.step()
    with pytest.raises(ValueError, match='whole number of milliseconds'):
        sim_client.acquire(time_step=0.0005)
    assert client.status().owner == 'holder'


def test_client_timeout_names_the_server_and_what(domain_id, client):
    """Without a server, a call ends in SimClockTimeout naming the service, on time."""
    sim = SimClockClient(client.node, server='/nobody_here', timeout_sec=1.0)
    start = time.monotonic()
    with pytest.raises(SimClockTimeout, match='/nobody_here/get_status did not appear'):
        sim.status()
    assert time.monotonic() - start < 5.0
    sim.close()


def test_client_works_inside_a_busy_single_threaded_callback(start_server, client):
    """Steps called from a timer callback of the caller's own executor do not deadlock."""
    start_server({'sync': True, 'time_step': 0.01})
    node = rclpy.create_node(
        'busy_user', context=client.context,
        parameter_overrides=[Parameter('use_sim_time', value=True)])
    executor = rclpy.executors.SingleThreadedExecutor(context=client.context)
    executor.add_node(node)
    sim = SimClockClient(node, timeout_sec=15.0)
    results = []

    def tick():
        results.append(sim.step())
    node.create_timer(0.001, tick, clock=Clock(clock_type=ClockType.STEADY_TIME))
    deadline = time.monotonic() + 30
    while len(results) < 20 and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.1)
    sim.close()
    executor.shutdown()
    node.destroy_node()
    assert [r.frame for r in results[:20]] == list(range(1, 21))


# -- command line ----------------------------------------------------------------------------

def _simclock(domain_id, *args, timeout=60):
    executable = os.path.join(get_package_prefix('sim_clock'), 'lib', 'sim_clock', 'simclock')
    return subprocess.run(
        [executable, *args], env=dict(os.environ, ROS_DOMAIN_ID=str(domain_id)),
        capture_output=True, text=True, timeout=timeout)


def test_cli_output_to_a_reader_that_went_away(start_server, client, domain_id):
    """`simclock status | head -1`: the reader closes the pipe; no traceback, exit code 0."""
    start_server()
    client.status()
    executable = os.path.join(get_package_prefix('sim_clock'), 'lib', 'sim_clock', 'simclock')
    for watch in ([], ['--watch', '--interval', '0.1']):
        process = subprocess.Popen(
            [executable, 'status', *watch], env=dict(os.environ, ROS_DOMAIN_ID=str(domain_id)),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        process.stdout.close()
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 0 and _ours(stderr) == [], (watch, stderr)


def _ours(stderr: str) -> list:
    """
    Return the lines of ``stderr`` that are not Fast DDS's own log.

    Fast DDS logs to stderr what it recovers from: a fresh-clone run, beside a second suite
    (shared memory is one for the machine), had the CLI log
    ``[RTPS_TRANSPORT_SHM Error] Failed init_port ...: open_and_lock_file failed`` and still
    answer and exit 0.
    """
    return [line for line in ANSI.sub('', stderr).splitlines() if not FAST_DDS_LOG.match(line)]


def test_cli_resets_prints_each_reset_the_last_one_first(start_server, client, domain_id):
    """`simclock resets`: the last reset before it started, then each one; Ctrl-C ends it."""
    start_server({'sync': True, 'time_step': 0.01})
    client.wait_for_clock()
    client.step('', 3)
    client.trigger('reset')
    executable = os.path.join(get_package_prefix('sim_clock'), 'lib', 'sim_clock', 'simclock')
    follower = subprocess.Popen(
        [executable, 'resets'], env=dict(os.environ, ROS_DOMAIN_ID=str(domain_id)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first, = _status_lines(follower, 1)
        client.set_sync(False)
        second, = _status_lines(follower, 1)
    finally:
        follower.send_signal(signal.SIGINT)
        _, errors = follower.communicate(timeout=15)
    assert follower.returncode == 0 and 'Traceback' not in errors, errors
    assert first == ('epoch 1: 0.030000000 s -> 0.000000000 s (simulation, sync on): '
                     '~/reset called\n')
    assert second.startswith('epoch 2: ') and '(simulation, sync off)' in second, second
    counted = _simclock(domain_id, 'resets', '--count', '1')
    assert (counted.returncode, counted.stdout.startswith('epoch 2: ')) == (0, True), counted


def _status_lines(process, count):
    """Read ``count`` lines of simclock's status from ``process``, skipping Fast DDS's logs."""
    lines = []
    while len(lines) < count:
        line = process.stdout.readline()
        assert line, f'simclock ended after {lines}'
        if 'RTPS_' not in line:
            lines.append(line)
    return lines


@pytest.mark.parametrize('ignored', [False, True])
def test_cli_status_watch_refreshes_until_ctrl_c(start_server, client, domain_id, ignored):
    """
    A watch prints a line per refresh with the measured rate; Ctrl-C ends it with 0.

    Also when started with SIGINT ignored, as a background job of a non-interactive shell is.
    """
    start_server({'real_time_factor': 2.0, 'time_step': 0.01})
    client.status()  # the server is up
    executable = os.path.join(get_package_prefix('sim_clock'), 'lib', 'sim_clock', 'simclock')
    watcher = subprocess.Popen(
        [executable, 'status', '--watch', '--interval', '0.2'],
        env=dict(os.environ, ROS_DOMAIN_ID=str(domain_id)), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignored else None)
    try:
        # Status lines only: Fast DDS may print an error of its own on stdout under load.
        lines = _status_lines(watcher, 4)
    finally:
        watcher.send_signal(signal.SIGINT)
        _, errors = watcher.communicate(timeout=15)
    assert watcher.returncode == 0, errors
    assert 'Traceback' not in errors, errors
    assert all(line.startswith('free run  frame ') for line in lines), lines
    assert 'measured -' in lines[0]  # nothing to compare the first answer with
    rates = [float(line.split('measured ')[1].split('x')[0]) for line in lines[1:]]
    assert all(rate > 0 for rate in rates), lines
    assert all('holder (none)  epoch 0' in line for line in lines), lines


def test_cli_watch_rate_never_divides_by_zero():
    """Two readings: a rate, or None across a reset or without wall time between them."""
    from sim_clock.client.cli_format import measured_rate
    assert measured_rate(None, (10, 0, 0)) is None
    assert measured_rate((0, 0, 0), (NS, 2 * NS, 0)) == 2.0
    assert measured_rate((0, 5, 0), (NS, 5, 0)) == 0.0  # the same answer twice: time stood
    assert measured_rate((NS, 0, 0), (NS, 10, 0)) is None  # no wall time between them
    assert measured_rate((0, 9 * NS, 0), (NS, 0, 1)) is None  # a reset between them


def test_cli_commands_and_exit_codes(start_server, client, domain_id):
    """Each command answers in words; refusals and timeouts exit non-zero with one line."""
    start_server()
    client.status()  # the server is up
    status = _simclock(domain_id, 'status')
    assert status.returncode == 0 and 'simulation, sync off' in status.stdout
    refused = _simclock(domain_id, 'step', '3')
    assert refused.returncode == 1
    assert refused.stderr.count('\n') == 1 and 'free-runs' in refused.stderr
    # The refusal names the commands that fix it, not services.
    assert "'simclock sync on'" in refused.stderr and '~/' not in refused.stderr
    assert _simclock(domain_id, 'sync', 'on').returncode == 0
    stepped = _simclock(domain_id, 'step', '5')
    assert stepped.returncode == 0 and 'frame 5, time 0.050000000 s' in stepped.stdout
    stepped = _simclock(domain_id, 'step', '--to', '8')
    assert stepped.returncode == 0 and 'frame 8, time 0.080000000 s' in stepped.stdout
    bad = _simclock(domain_id, 'step', '0')
    assert bad.returncode == 2 and 'from 1 to 1000000' in bad.stderr  # before asking the server
    assert _simclock(domain_id, 'rate', '-1').returncode == 2
    assert _simclock(domain_id, 'sync', 'off').returncode == 0
    assert _simclock(domain_id, 'rate', '2.5').returncode == 0
    assert client.status().real_time_factor == 2.5
    assert _simclock(domain_id, 'mode', 'real_time').returncode == 0
    assert client.status().mode == 'real_time'
    for command in ('pause', 'resume', 'reset'):
        assert _simclock(domain_id, command).returncode == 0, command
    missing = _simclock(domain_id, '--server', '/nobody', '--timeout', '1', 'status')
    assert missing.returncode == 3 and missing.stderr.count('\n') == 1
    assert _simclock(domain_id, 'frobnicate').returncode == 2


def test_cli_status_shows_participants_and_what_the_frame_waits_for(
        start_server, client, domain_id):
    """`simclock status` lists participants, what each finished, and whom the frame waits for."""
    from sim_clock.srv import Join
    start_server({'participant_timeout': 60.0})
    assert _simclock(domain_id, 'status').stdout.endswith('participants: (none)\n')
    assert client.call(Join, 'join', Join.Request(name='slow_one')).success
    # Free run: the next frame waits for a participant that never says done.
    client.spin_until(lambda: list(client.status().waiting_for) == ['slow_one'],
                      'the frame to wait for slow_one')
    status = _simclock(domain_id, 'status')
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    assert 'participants: 1' in lines, status.stdout
    assert [line for line in lines if 'slow_one  done up to (no frame yet), slowest answer'
            in line], status.stdout
    assert 'waits for: slow_one' in lines, status.stdout


def test_cli_a_server_that_never_appeared_fails_fast_and_says_when(domain_id):
    """No retries for a service that never appeared; the message says how long it waited."""
    started = time.monotonic()
    missing = _simclock(domain_id, '--server', '/nope', '--timeout', '1', 'status')
    waited = time.monotonic() - started
    assert missing.returncode == 3, missing.stderr
    # At least the --timeout; that it is one wait, not one per retry: test_cli.py.
    assert 1.0 <= waited < 10, missing.stderr
    assert ('no clock server answered at /nope (looked for /nope/get_status for 1 s, for '
            "'simclock status')") in missing.stderr


def test_cli_options_go_on_either_side_of_the_command(start_server, client, domain_id):
    """`--server` and `--timeout` work before and after the command; after overrides."""
    start_server()
    client.status()
    after = _simclock(domain_id, 'status', '--server', '/nope', '--timeout', '0.5')
    assert after.returncode == 3 and 'looked for /nope/get_status' in after.stderr, after.stderr
    assert 'for 0.5 s' in after.stderr
    overridden = _simclock(domain_id, '--server', '/nope', 'status', '--server', '/sim_clock')
    assert overridden.returncode == 0 and 'mode:' in overridden.stdout, overridden.stderr
    stepped = _simclock(domain_id, 'step', '--timeout', '5', '--user-id', 'me', '2')
    assert stepped.returncode == 1 and "'simclock sync on'" in stepped.stderr, stepped.stderr


def test_cli_every_command_and_argument_has_help():
    """Each subcommand, and each of its arguments, says what it is for in --help."""
    import argparse
    from sim_clock.client.cli_arguments import add_arguments
    parser = argparse.ArgumentParser(prog='simclock')
    add_arguments(parser)
    commands = next(action for action in parser._actions
                    if isinstance(action, argparse._SubParsersAction))
    helps = {action.dest: action.help for action in commands._choices_actions}
    assert set(helps) == set(commands.choices)
    for name, command in commands.choices.items():
        assert helps[name], name
        for action in command._actions:
            assert action.help, (name, action.dest)


def test_cli_refusals_name_commands_not_services():
    """Every refusal of the time core that names a service reads, in simclock, as a command."""
    import ast
    from sim_clock.client.cli_format import for_the_command_line

    def text(node) -> str:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.JoinedStr):
            return ''.join(text(part) if isinstance(part, ast.Constant) else 'X'
                           for part in node.values)
        return ''
    refusals = []  # the reasons given to Refused, and the reasons kept as module constants
    for name in sorted(os.listdir(os.path.join(ROOT, 'sim_clock', 'core'))):
        if name.endswith('.py'):
            with open(os.path.join(ROOT, 'sim_clock', 'core', name)) as source:
                tree = ast.parse(source.read())
            for node in ast.walk(tree):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                        and node.func.id == 'Refused' and node.args):
                    refusals.append(text(node.args[0]))
                elif (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                      and node.targets[0].id.isupper()):
                    refusals.append(text(node.value))
    refusals = [reason for reason in refusals if '~/' in reason]
    assert len(refusals) >= 4, refusals
    for reason in refusals:
        assert '~/' not in for_the_command_line(reason), reason
    held = for_the_command_line("sync mode is held by 'a'; only that user_id may step", 'a')
    assert "'simclock step --user-id a'" in held and "'simclock sync off'" in held


def test_ros2_simclock_verb(start_server, client, domain_id):
    """`ros2 simclock status` works where ros2cli is installed."""
    # scripts/run_tests.sh runs the venv's pytest without the venv's bin on PATH: look there too.
    ros2 = shutil.which('ros2', path=os.pathsep.join(
        [os.path.dirname(sys.executable), os.environ.get('PATH', '')]))
    if importlib.util.find_spec('ros2cli') is None or ros2 is None:
        pytest.skip('ros2cli is not installed (not on PyPI; see README)')
    start_server()
    client.status()
    result = subprocess.run(
        [ros2, 'simclock', 'status'], env=dict(os.environ, ROS_DOMAIN_ID=str(domain_id)),
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and 'frame:' in result.stdout, result.stderr


# -- the pytest fixture and the examples --------------------------------------------------

def test_fixture_works_from_a_test_outside_the_package(tmp_path):
    """A user's test file, in a folder of its own, gets the sim_clock fixture from the plugin."""
    shutil.copy(os.path.join(EXAMPLES, 'test_lockstep_example.py'), tmp_path)
    result = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
         'test_lockstep_example.py'],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert '2 passed' in result.stdout


def _example(domain_id, tmp_path, name, *args):
    return subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, name), *args],
        env=dict(os.environ, ROS_DOMAIN_ID=str(domain_id)), cwd=tmp_path,
        capture_output=True, text=True, timeout=180)


def test_morai_style_example(start_server, client, domain_id, tmp_path):
    """sync_mode_cmd, 100 steps of 10 ms, release: ends at exactly 1 s."""
    start_server()
    client.status()
    result = _example(domain_id, tmp_path, 'morai_style.py', '--frames', '100')
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'frame 100 at 1.000000000 s' in result.stdout
    assert client.status().sync is False


def test_carla_style_example(start_server, client, domain_id, tmp_path):
    """200 ticks of 50 ms: frame 200 at exactly 10 s."""
    start_server()
    client.status()
    result = _example(domain_id, tmp_path, 'carla_style.py', '--ticks', '200')
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'frame 200, time 10000000000 ns' in result.stdout


def test_rl_step_loop_example(start_server, client, domain_id, tmp_path):
    """Two episodes of 50 actions of 100 ms: each integrates exactly 5 s, identically."""
    start_server()
    client.status()
    result = _example(domain_id, tmp_path, 'rl_step_loop.py', '--episodes', '2')
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith('episode')]
    assert len(lines) == 2
    assert all('final position 5.000' in line and 'plant ticks 50' in line for line in lines)
    assert lines[0].split(':', 1)[1] == lines[1].split(':', 1)[1]


def test_demo_node_lives_on_clock(start_server, client, domain_id, tmp_path):
    """The demo node logs simulated seconds while the server free-runs at 10x."""
    start_server({'real_time_factor': 10.0})
    process = subprocess.Popen(
        [sys.executable, os.path.join(EXAMPLES, 'demo_node.py'),
         '--ros-args', '-p', 'use_sim_time:=true'],
        env=dict(os.environ, ROS_DOMAIN_ID=str(domain_id)), cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines = []
        deadline = time.monotonic() + 60
        while not any('simulated second 3' in line for line in lines):
            assert time.monotonic() < deadline, lines
            lines.append(process.stdout.readline())
    finally:
        process.send_signal(2)
        assert process.wait(30) == 0


def test_demo_launch_file(start_server):
    """examples/demo.launch.py declares a launch description (needs launch)."""
    if importlib.util.find_spec('launch_ros') is None:
        pytest.skip('launch and launch_ros are not installed (not on PyPI; see README)')
    spec = importlib.util.spec_from_file_location(
        'demo_launch', os.path.join(EXAMPLES, 'demo.launch.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert len(module.generate_launch_description().entities) == 2


# -- diagnostics -----------------------------------------------------------------------------

def test_diagnostics_report_state_and_measured_pace(start_server, client):
    """
    About once a second, /diagnostics carries mode, frame, holder and the measured pace.

    The pace reported is checked against the frames on the wire in the same wall-time window:
    between the two reports' stamps, the /clock frames' DDS source timestamps (the server's
    clock when it published them). Both measure what the server did, so a loaded machine that
    slows the server changes both alike; the configured factor itself is the benchmark's to
    check (``benchmarks/performance``), not a timed test's.
    """
    # 200 frames a second: a test process on a loaded machine keeps up with them.
    start_server({'real_time_factor': 2.0, 'time_step': 0.01})
    reports, stamps = [], []

    def on_diagnostics(msg):
        reports.extend(msg.status)
        stamps.extend([msg.header.stamp.sec * NS + msg.header.stamp.nanosec] * len(msg.status))
    client.node.create_subscription(DiagnosticArray, '/diagnostics', on_diagnostics, 10)
    client.spin_until(lambda: len(reports) >= 3, '3 diagnostic reports', timeout=20)
    # The frames published up to the last report's stamp are in.
    client.spin_until(lambda: client.clock_sources and client.clock_sources[-1] > stamps[-1],
                      'the frames of the last report')
    values = {kv.key: kv.value for kv in reports[-1].values}
    assert reports[-1].name == 'sim_clock: clock'
    assert values['mode'] == 'simulation' and values['sync'] == 'false'
    assert values['real_time_factor'] == '2'
    assert {'frame', 'epoch', 'holder', 'paused', 'time_ns'} <= set(values)
    previous = {kv.key: kv.value for kv in reports[-2].values}
    sources, sims = client.clock_sources, [sim for _, sim in client.clocks]

    def time_at(wall_ns: int) -> int:
        """Return the simulated time of the last frame published at or before ``wall_ns``."""
        return sims[bisect.bisect_right(sources, wall_ns) - 1]

    # Each report's time is that of the last frame out before it.
    assert [time_at(stamps[-2]), time_at(stamps[-1])] == [
        int(previous['time_ns']), int(values['time_ns'])]
    on_the_wire = (time_at(stamps[-1]) - time_at(stamps[-2])) / (stamps[-1] - stamps[-2])
    assert on_the_wire > 0
    # The report's window is on the steady clock, the stamps' on the system clock, taken a
    # few microseconds apart: the two paces agree within 1%.
    assert float(values['measured_real_time_factor']) == pytest.approx(on_the_wire, rel=0.01)


def test_client_cost_benchmark_runs(tmp_path, domain_id):
    """The per-call cost benchmark runs and prints its figures (a smoke run, no timing)."""
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, 'benchmarks', 'client_step_cost.py'),
         '--calls', '200', '--baseline-calls', '200', '--domain', str(domain_id)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    figures = [json.loads(line) for line in result.stdout.splitlines() if line.startswith('{')]
    assert [f['name'] for f in figures] == [
        'SimClockClient.step', 'baseline spin_until_future_complete']
    assert all(f['first_us'] > 0 and f['last_us'] > 0 for f in figures)
