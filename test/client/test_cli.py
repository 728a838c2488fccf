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
simclock against real servers: the bag commands, arguments checked first, who may give which.

Most commands run in this process (``cli.main``: the same parsing and calls as the installed
executable, without its start-up cost); those that need a signal run as the executable.
"""

import os
import select
import signal
import subprocess
import sys
import time

from bags import START_NS
from bags import write_test_bag
from harness import executable
from harness import NS
from harness import stamp_ns
import pytest
from sim_clock.client import cli
from sim_clock.client.bag_diff import compare
from sim_clock.srv import GetProgress

pytestmark = pytest.mark.process

MS = 1_000_000
SYNC = {'sync': True, 'time_step': 0.01}


@pytest.fixture
def simclock(domain_id, monkeypatch, capsys):
    """Return a function that runs simclock in this process: (exit code, stdout, stderr)."""
    monkeypatch.setenv('ROS_DOMAIN_ID', str(domain_id))

    def run(*argv):
        try:
            code = cli.main(list(argv))
        except SystemExit as ended:  # argparse: --help, a usage error
            code = ended.code
        out, err = capsys.readouterr()
        return code, out, err
    return run


@pytest.fixture
def bag_player(start_server, client, tmp_path):
    """Start a bag player in sync mode (10 ms frames) on a one-second bag; return it."""
    path = str(tmp_path / 'bag')
    records = write_test_bag(path, 'sqlite3')
    player = start_server(SYNC, argv=[path], executable=executable('bag_player'))
    player.records = records
    client.status_when_ready()
    return player


# -- arguments are checked before any server is looked for ------------------------------------

BAD_ARGUMENTS = [
    (('rate', '-1'), 'real_time_factor must be between 0 (as fast as possible) and 10000'),
    (('rate', 'nan'), 'expected a finite number'),
    (('step', '0'), 'expected a whole number of frames from 1 to 1000000'),
    (('step', '1000001'), 'from 1 to 1000000'),
    (('step', '2.5'), 'from 1 to 1000000'),
    (('step', '--to', '-1'), 'a frame number, 0 or more'),
    (('step', '--until', '-1'), 'seconds must be a finite number, 0 or more'),
    (('step', '--until', '0.0000000001'), 'whole nanoseconds (at most 9 decimals)'),
    (('step', '--until', '2147483648'), 'the latest ROS time'),
    (('step', '3', '--to', '4'), 'not allowed with argument N'),
    (('step', '--to', '3', '--until', '1'), 'not allowed with argument --to'),
    (('status', '--watch', '--interval', '0'), 'expected seconds, more than 0'),
    (('progress', '--follow', '--interval', '-1'), 'expected seconds, more than 0'),
    (('resets', '--count', '-1'), 'a whole number, 0 (never end) or more'),
    (('seek', '-2'), 'seconds must be a finite number, 0 or more'),
    (('seek', 'soon'), 'seconds must be a decimal number'),
    (('--timeout', '0', 'status'), 'expected seconds, more than 0'),
    (('status', '--user-id', 'me'), 'unrecognized arguments: --user-id'),
    (('pause', '--user-id', 'me'), 'unrecognized arguments: --user-id'),
    (('--user-id', 'me', 'status'), '--user-id applies to step and sync only, not to status'),
]


@pytest.mark.parametrize('argv, allowed', BAD_ARGUMENTS,
                         ids=[' '.join(argv) for argv, _ in BAD_ARGUMENTS])
def test_bad_arguments_refused_at_once_saying_what_is_allowed(simclock, argv, allowed):
    """Exit code 2 and what is allowed, before any ROS entity exists (no server is running)."""
    started = time.monotonic()
    code, out, err = simclock(*argv, '--timeout', '30') if argv[0] != '--timeout' else (
        simclock(*argv))
    assert (code, out) == (2, ''), err
    assert allowed in err, err
    assert time.monotonic() - started < 1.0, 'it waited for a server'


def test_the_executable_refuses_a_bad_rate_without_waiting(domain_id):
    """`simclock rate -1` as installed: exit 2 at once, not after the server's timeout."""
    started = time.monotonic()
    result = subprocess.run(
        [executable('simclock'), 'rate', '-1', '--timeout', '60'],
        env=dict(os.environ, ROS_DOMAIN_ID=str(domain_id)), capture_output=True, text=True,
        timeout=60)
    assert result.returncode == 2, result.stderr
    assert 'real_time_factor must be between 0' in result.stderr
    assert time.monotonic() - started < 30, 'it waited for the --timeout of 60 s'


def test_user_id_is_offered_only_where_it_means_something(simclock):
    """--user-id in the help of step and sync, and of no other command."""
    for command in ('status', 'step', 'pause', 'resume', 'reset', 'sync', 'rate', 'mode',
                    'resets', 'seek', 'progress', 'diff'):
        code, out, _ = simclock(command, '--help')
        assert code == 0, command
        assert ('--user-id USER_ID' in out) == (command in ('step', 'sync')), (command, out)
    code, out, _ = simclock('--help')
    assert code == 0 and '--user-id USER_ID' not in out and '[--user-id' not in out


# -- what each command says when no server answers ---------------------------------------------

NO_SERVER = [
    (('status',), 'no clock server answered at /sim_clock (looked for /sim_clock/get_status'),
    (('step', '2'), 'no clock server answered at /sim_clock (looked for /sim_clock/step'),
    (('step', '--until', '1'), '(looked for /sim_clock/step'),
    (('pause',), '(looked for /sim_clock/pause'),
    (('reset',), '(looked for /sim_clock/reset'),
    (('sync', 'on'), '(looked for /sim_clock/set_sync'),
    (('sync', 'on', '--user-id', 'me'), '(looked for /sim_clock/sync_mode_cmd'),
    (('rate', '2'), '(looked for /sim_clock/set_parameters'),
    (('mode', 'real_time'), '(looked for /sim_clock/set_parameters'),
    (('resume',), '(looked for /sim_clock/resume'),
    (('resets',), '(looked for /sim_clock/get_status'),
    (('seek', '1'), 'no bag player answered at /sim_clock (looked for /sim_clock/seek'),
    (('progress',), 'no bag player answered at /sim_clock (looked for /sim_clock/get_progress'),
]


def test_no_server_each_command_names_itself_the_server_and_the_service(simclock):
    """Exit 3 and one line, after a wait of --timeout: the command, the server and service."""
    for argv, expected in NO_SERVER:
        started = time.monotonic()
        code, out, err = simclock(*argv, '--timeout', '0.5')
        assert time.monotonic() - started >= 0.5, argv
        lines = [line for line in err.splitlines() if 'RTPS_' not in line]
        assert (code, out, len(lines)) == (3, '', 1), (argv, err)
        assert expected in lines[0], (argv, lines[0])
        assert f"for 0.5 s, for 'simclock {argv[0]}'" in lines[0], lines[0]
        assert f"ROS_DOMAIN_ID ({os.environ['ROS_DOMAIN_ID']})" in lines[0], lines[0]


def test_no_server_is_waited_for_once(simclock):
    """
    A service that never appeared is not asked again: one wait of --timeout, not two.

    Two waits would take 6 s; a node's start and end take well under the 3 s left.
    """
    started = time.monotonic()
    code, _, _ = simclock('step', '2', '--timeout', '3')
    waited = time.monotonic() - started
    assert code == 3
    assert 3.0 <= waited < 6.0, waited


# -- the bag commands ------------------------------------------------------------------------

def test_step_until_reaches_a_time_on_the_clock_axis_exactly(bag_player, client, simclock):
    """
    `step --until`: the first frame at or after the time, on /clock (the bag's, 1000 s + 7 ns).

    Between two frames it stops at the one after, and says so; run again, or for a time
    passed, it steps nothing; a time off the grid by 7 ns is not on it.
    """
    code, out, err = simclock('step', '--until', '1000.05')
    assert code == 0, err
    assert out == ('frame 5, time 1000.050000007 s (epoch 0): 1000.050000000 s is between two '
                   'frames; stopped at the first frame after it\n')
    code, out, err = simclock('step', '--until', '1000.100000007')
    assert (code, out) == (0, 'frame 10, time 1000.100000007 s (epoch 0)\n'), err
    code, out, err = simclock('step', '--until', '1000.100000007')  # asked again
    assert code == 0, err
    assert out.startswith('frame 10, time 1000.100000007 s (epoch 0): already at '), out
    code, out, err = simclock('step', '--until', '1000')
    assert code == 0 and 'already past 1000.000000000 s, nothing stepped' in out, out
    assert client.status().frame == 10


def test_seek_and_progress_on_a_bag_player(bag_player, client, simclock):
    """`seek TIME` is a reset to that /clock time; `progress` shows what ~/get_progress says."""
    code, out, err = simclock('seek', '1000.5')
    assert (code, out) == (0, 'at 1000.500000000 s (epoch 1): a reset\n'), err
    assert stamp_ns(client.status().clock) == 1000 * NS + 500 * MS
    code, out, err = simclock('step', '--until', '1000.605')
    assert code == 0 and out.startswith('frame 11, time 1000.610000000 s (epoch 1): '), out
    code, out, err = simclock('progress')
    assert code == 0, err
    progress = client.call(GetProgress, 'get_progress')
    assert stamp_ns(progress.bag_time) == START_NS + 610 * MS - 7
    lines = out.splitlines()
    assert lines[0] == 'playback:  stepped'
    assert lines[1] == (f'bag time:  1000.610000000 s ({progress.percent:.1f}% of '
                        '1000.000000007 s to 1001.000000007 s)'), out
    assert lines[2] == (f'messages:  {progress.messages_out} of {len(bag_player.records)} out '
                        'since the last reset'), out
    assert lines[3] == 'epoch:     1'
    # Outside the bag: refused by the player, nothing changed.
    code, out, err = simclock('seek', '2000')
    assert (code, out) == (1, ''), err
    assert err.startswith('refused: seek time 2000000000000 ns is outside the bag'), err
    assert client.status().epoch == 1


def test_progress_follow_prints_a_line_per_refresh_until_ctrl_c(bag_player, client, domain_id):
    """`progress --follow` (not a terminal): a line per refresh, the player's; Ctrl-C ends it."""
    follower = subprocess.Popen(
        [executable('simclock'), 'progress', '--follow', '--interval', '0.2'],
        env=dict(os.environ, ROS_DOMAIN_ID=str(domain_id)), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)
    lines = Lines(follower)
    try:
        first = lines.read()
        assert client.step('', 30).success
        later = lines.read()
        while not later.startswith('bag 1000.300 s'):  # the refresh that shows the step
            later = lines.read()
    finally:
        follower.send_signal(signal.SIGINT)
        _, errors = follower.communicate(timeout=15)
    assert follower.returncode == 0 and b'Traceback' not in errors, errors
    total = len(bag_player.records)
    assert first.startswith('bag 1000.000 s   0.0%') and f' 0/{total} msgs' in first, first
    assert first.endswith('(stepped)  epoch 0'), first
    assert later.startswith('bag 1000.300 s  30.0%  ') and later.endswith('epoch 0'), later


class Lines:
    """The lines a process prints, each read within a timeout; Fast DDS's own skipped."""

    def __init__(self, process):
        self._fd = process.stdout.fileno()
        self._pending = b''

    def read(self, timeout: float = 15.0) -> str:
        """Return the next line without its end; fail after ``timeout`` s without one."""
        deadline = time.monotonic() + timeout
        while True:
            if b'\n' in self._pending:
                line, self._pending = self._pending.split(b'\n', 1)
                if b'RTPS_' not in line:
                    return line.decode()
                continue
            remaining = deadline - time.monotonic()
            assert remaining > 0, f'no line within {timeout} s'
            ready, _, _ = select.select([self._fd], [], [], remaining)
            if ready:
                chunk = os.read(self._fd, 4096)
                assert chunk, 'the process ended'
                self._pending += chunk


def test_seek_and_progress_say_when_the_server_is_not_a_bag_player(
        start_server, client, simclock):
    """A clock server answers get_status but has no ~/seek: said so, exit 3."""
    start_server(SYNC)
    client.status_when_ready()
    code, out, err = simclock('seek', '1', '--timeout', '1')
    assert (code, out) == (3, ''), err
    assert ('the clock server at /sim_clock is not a bag player (looked for /sim_clock/seek'
            in err), err


# -- the executable into pipes -----------------------------------------------------------------

def run_executable(domain_id, *argv):
    """
    Run the installed simclock, stdout and stderr pipes; return (exit code, stdout, stderr).

    Its output is block-buffered, as a user's pipe makes it (not under PYTHONUNBUFFERED):
    whatever the process does not flush before it ends is lost. Fast DDS's lines are left out.
    """
    env = {name: value for name, value in os.environ.items() if name != 'PYTHONUNBUFFERED'}
    env['ROS_DOMAIN_ID'] = str(domain_id)
    result = subprocess.run([executable('simclock'), *argv], env=env, stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=60)
    errors = ''.join(line for line in result.stderr.splitlines(keepends=True)
                     if 'RTPS_' not in line)
    return result.returncode, result.stdout, errors


def test_a_server_stopped_during_a_step_is_named_at_once(start_server, client, domain_id):
    """
    The server stops (Ctrl-C) while a step waits: the step says so, not that it did not appear.

    The step waits on a participant that never says done; the server is stopped once the
    step's first frame is out. The call ends when the server's service leaves the graph, with
    the server named, exit 3 (no answer), and is not asked again.
    """
    from sim_clock.srv import Join
    server = start_server({'sync': True, 'participant_timeout': 60.0})
    client.status_when_ready()
    joined = client.call(Join, 'join', Join.Request(name='silent', period_ns=0))
    assert joined.success, joined.message
    stepping = subprocess.Popen(
        [executable('simclock'), 'step', '100000'], env=dict(os.environ, ROS_DOMAIN_ID=str(
            domain_id)), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        client.spin_until(lambda: client.status().frame >= 1, 'the step to put out its frame')
        server.stop()
        _, errors = stepping.communicate(timeout=30)
    finally:
        if stepping.poll() is None:
            stepping.kill()
    assert stepping.returncode == 3, errors
    assert 'the server /sim_clock went away during the step call' in errors, errors
    assert 'did not appear' not in errors and 'Traceback' not in errors, errors


def test_the_executable_prints_and_ends_into_pipes_as_the_command_does(
        start_server, client, simclock, domain_id, tmp_path):
    """
    The executable's output into pipes and its exit code are those of ``cli.main``.

    An answer (status, 0), a refusal (1), no such server (3) and, without a server, a
    difference printed on stdout with 1: the executable ends without the libraries' teardown
    (sim_clock.process.process_exit), and loses nothing of what it printed.
    """
    start_server(SYNC)
    client.status_when_ready()
    write_test_bag(str(tmp_path / 'a'), 'sqlite3')
    write_test_bag(str(tmp_path / 'b'), 'sqlite3', seconds=0.5)
    assert simclock('sync', 'on', '--user-id', 'me')[0] == 0
    cases = {
        ('status',): 0,
        ('step', '2'): 1,  # held by 'me'
        ('seek', '1', '--timeout', '3'): 3,  # not a bag player
    }
    for argv, code in cases.items():
        expected = simclock(*argv)
        assert expected[0] == code, (argv, expected)
        assert expected[1] or expected[2], argv
        assert run_executable(domain_id, *argv) == expected, argv
    assert client.status().frame == 0
    # diff writes to the sys.stdout of its import, not to the one capsys puts in its place.
    difference = compare(str(tmp_path / 'a'), str(tmp_path / 'b'))
    assert not difference.same
    assert run_executable(domain_id, 'diff', str(tmp_path / 'a'), str(tmp_path / 'b')) == (
        1, '\n'.join(difference.lines()) + '\n', '')


def test_the_executables_clients_leave_the_graph_as_it_ends(start_server, client, domain_id):
    """
    ``simclock status`` destroys its client, node and context before its exit.

    The server's side of its client unmatches at once: the client of ``get_status`` is gone
    from the graph well within a participant's lease (20 s), as it would not be from a
    process that skipped that destruction.
    """
    start_server(SYNC)
    client.status_when_ready()
    service = '/sim_clock/get_status'
    baseline = client.node.count_clients(service)
    for _ in range(3):
        code, out, err = run_executable(domain_id, 'status')
        assert code == 0 and out.startswith('mode:'), (code, out, err)
    client.spin_until(lambda: client.node.count_clients(service) == baseline,
                      'the executable clients gone from the graph', timeout=5.0)


#: The ``ros2 simclock`` verb as ros2cli runs it (ros2cli itself is not on PyPI: a stand-in
#: for its base class): parse, then the verb's main; ros2cli would then exit with its result.
VERB = """
import argparse, sys, types
ros2cli_command = types.ModuleType('ros2cli.command')
ros2cli_command.CommandExtension = object
sys.modules.update({'ros2cli': types.ModuleType('ros2cli'), 'ros2cli.command': ros2cli_command})
from sim_clock.command.simclock import SimclockCommand
verb = SimclockCommand()
parser = argparse.ArgumentParser(prog='ros2 simclock')
verb.add_arguments(parser, 'ros2')
result = verb.main(parser=parser, args=parser.parse_args(sys.argv[1:]))
print(f'the verb returned {result!r}')
"""


def test_the_ros2_verb_ends_the_process_with_the_commands_exit_code(
        simclock, domain_id, tmp_path):
    """`ros2 simclock status` with no server: what simclock prints, and its exit code, 3."""
    expected = simclock('status', '--timeout', '0.5')
    assert expected[0] == 3
    env = {name: value for name, value in os.environ.items() if name != 'PYTHONUNBUFFERED'}
    env['ROS_DOMAIN_ID'] = str(domain_id)
    # Run elsewhere than the repository, whose sim_clock/ (no srv/) would shadow the install.
    result = subprocess.run(
        [sys.executable, '-c', VERB, 'status', '--timeout', '0.5'], env=env, cwd=tmp_path,
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    errors = ''.join(line for line in result.stderr.splitlines(keepends=True)
                     if 'RTPS_' not in line)
    assert (result.returncode, result.stdout, errors) == expected


# -- sync mode held from the command line ----------------------------------------------------

def test_sync_with_a_user_id_takes_and_gives_back_the_hold(start_server, client, simclock):
    """`sync on --user-id me` holds sync mode: only `step --user-id me` steps; `off` gives it."""
    start_server()
    client.status_when_ready()
    code, out, err = simclock('sync', 'on', '--user-id', 'me')
    assert (code, out) == (0, "sync on, held by 'me'\n"), err
    assert client.status().owner == 'me'
    code, out, err = simclock('step', '2')
    assert code == 1 and "'simclock step --user-id me'" in err, err
    code, out, err = simclock('step', '2', '--user-id', 'me')
    assert (code, out) == (0, 'frame 2, time 0.020000000 s (epoch 1)\n'), err
    code, out, err = simclock('--user-id', 'someone', 'sync', 'off')  # before the command too
    assert code == 1 and "held by 'me'" in err, err
    code, out, err = simclock('sync', 'off', '--user-id', 'me')
    assert (code, out) == (0, "sync off, released by 'me'\n"), err
    status = client.status()
    assert (status.sync, status.owner) == (False, '')


def test_status_names_the_expected_nodes_and_what_each_lacks(start_server, client, simclock):
    """expected_participants on the server: `simclock status` names them, and what each lacks."""
    start_server({**SYNC, 'expected_participants': '/planner'})
    client.status_when_ready()
    code, out, err = simclock('status')
    assert code == 0, err
    lines = out.splitlines()
    assert 'expected: /planner' in lines, out
    waiting = lines.index('not ready (no frame goes out until they are):')
    assert lines[waiting + 1].startswith('  /planner: '), out
