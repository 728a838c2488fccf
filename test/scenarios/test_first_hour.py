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

"""The first hour as the README says it: what a new user types first behaves."""

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import urllib.request

from ament_index_python.packages import get_package_share_directory
from bags import MS
from bags import START_NS
from bags import write_string_bag
from harness import executable
from harness import ROOT
from harness import stamp_ns
import pytest
from rosbags.rosbag2 import Reader
import yaml

pytestmark = pytest.mark.process

#: The distribution of the set-up that runs the suite: the script is asked for the same one.
DISTRO = 'kilted' if os.path.basename(sys.prefix) == '.venv-kilted' else 'jazzy'


def test_run_server_help_prints_the_usage_and_starts_nothing():
    """
    ``scripts/run_server.sh --help``: the script's usage, then the node's with its parameters.

    Exit 0 and no traceback (``--help`` once went to rclpy as a ROS argument). Set up already,
    the script sets nothing up again (the suite's installed package stays as it is).
    """
    result = subprocess.run(
        [os.path.join(ROOT, 'scripts', 'run_server.sh'), '--distro', DISTRO, '--help'],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith('usage: scripts/run_server.sh [--distro jazzy|kilted] [-p')
    assert 'usage: clock_server' in result.stdout
    assert 'participant_timeout (default 10.0)' in result.stdout  # the node's parameters
    assert 'Traceback' not in result.stdout + result.stderr
    assert 'setup:' not in result.stdout + result.stderr


def _readme_block(language: str, holding: str) -> str:
    """Return the README's ``language`` code block that holds ``holding``, as written."""
    with open(os.path.join(ROOT, 'README.md')) as readme:
        blocks = re.findall(rf'```{language}\n(.*?)```', readme.read(), re.S)
    [block] = [block for block in blocks if holding in block]
    return block


def test_the_readme_python_loop_as_typed_leaves_the_server_as_it_found_it(
        start_server, client, domain_id, tmp_path):
    """
    The README's lockstep loop, run as written against the Quick start's server.

    Typed after the Quick start's ``step 100``, it prints what its comment says (100 frames
    and 1 s, in frames of its own 10 ms); on exit the server is as the Quick start left it:
    sync on with no holder, frames of 1 ms, after the two resets of sync off and on again.
    """
    block = _readme_block('python', 'clock.sync_mode(time_step=0.01)')
    expected = re.search(r'print\(result\.frame - start\.frame, result\.time_ns - '
                         r'start\.time_ns\)\s+# (.*)', block).group(1)
    start_server({'sync': True, 'time_step': 0.001})
    client.status_when_ready()
    assert client.step('', 100).success  # the Quick start's ros2 simclock step 100
    before = client.status()
    run = subprocess.run([sys.executable, '-c', block], capture_output=True, text=True,
                         timeout=120, cwd=str(tmp_path),
                         env=dict(os.environ, ROS_DOMAIN_ID=str(domain_id)))
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip() == expected == '100 1000000000'
    assert 'DeprecationWarning' not in run.stderr, run.stderr
    after = client.status()
    assert (after.mode, after.sync, after.owner, after.time_step_ns) == (
        before.mode, True, '', 1_000_000)
    assert (after.epoch, after.frame, stamp_ns(after.clock)) == (before.epoch + 2, 0, 0)


def _as_typed(line: str, share: str) -> list:
    """
    Return the argv that runs README command ``line`` here: the ``ros2`` CLI's where it is.

    Without it (not on PyPI), each ``ros2`` verb becomes what it runs: ``ros2 launch``'s node
    with the launch file's params file and arguments (``bag``, ``start_at_zero`` as the
    player's own flags), ``ros2 run`` and ``ros2 simclock`` their executables. ``ros2 param
    set`` is left to the caller (a SetParameters call, as that verb makes).
    """
    argv = shlex.split(line)
    if shutil.which('ros2') is not None:
        return argv
    assert argv[0] == 'ros2', line
    verb, rest = argv[1], argv[2:]
    if verb == 'launch':
        package, launch_file, *arguments = rest
        assert package == 'sim_clock', line
        pairs = dict(argument.split(':=', 1) for argument in arguments)
        own = []
        if launch_file == 'bag_player.launch.py':
            own.append(pairs.pop('bag'))
            if pairs.pop('start_at_zero', 'false') == 'true':
                own.append('--start-at-zero')
        name = {'sim_clock.launch.py': 'clock_server',
                'bag_player.launch.py': 'bag_player'}[launch_file]
        return [executable(name), *own, '--ros-args', '--params-file',
                os.path.join(share, 'config', 'sim_clock.yaml'),
                *(f for key, value in pairs.items() for f in ('-p', f'{key}:={value}'))]
    if verb == 'run':
        return [executable(rest[1]), *rest[2:]]
    if verb == 'simclock':
        return [executable('simclock'), *rest]
    assert verb == 'param', line
    return argv


def _open_served_page(argv, cwd: str, env: dict, line: str) -> str:
    """
    Run a command that serves a page until Ctrl-C: open the URL it prints, then press Ctrl-C.

    Return the URL line; the page must be the panel's, and the command must end with 0. It
    serves on any free port (``--port 0`` added): two runs of the suite on one host would
    both take the default one.
    """
    served = subprocess.Popen([*argv, '--port', '0'], cwd=cwd, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        said = served.stdout.readline()
        assert 'http://' in said, (line, said + served.stdout.read())
        url = said.split(': ', 1)[1].strip()
        with urllib.request.urlopen(url, timeout=60) as page:
            assert '<title>sim_clock panel</title>' in page.read().decode(), url
        served.send_signal(signal.SIGINT)
        assert served.wait(60) == 0, (line, said + served.stdout.read())
    finally:
        if served.poll() is None:
            served.kill()
            served.wait()
        served.stdout.close()
    return said


def _run_block(block: str, client, domain_id: int, cwd: str, check=None) -> list:
    """
    Run the README's shell ``block`` as a user types it; return each foreground line's output.

    ``check(outputs)`` runs at the end, while the nodes of terminal 1 still run.

    ``# terminal 1``: a node that keeps running in a terminal of its own; the next line is
    typed once it says it publishes /clock, as a user who sees it start. The other lines are
    one shell's: a trailing ``&`` runs in the background, ``wait`` waits for those (each must
    end with 0), every other line runs to its end with exit code 0.
    """
    from harness import ServerProcess
    share = get_package_share_directory('sim_clock')
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain_id))
    servers, background, outputs = [], [], []

    def wait():
        for process in background:
            assert process.wait(60) == 0, process.communicate()
        background.clear()
    try:
        for line in block.strip().splitlines():
            command, _, comment = line.partition('#')
            if command.strip() == 'wait':
                wait()
                continue
            argv = _as_typed(command.strip().rstrip('&'), share)
            if 'terminal 1' in comment:
                server = ServerProcess(domain_id, cwd, executable=argv[0], argv=argv[1:],
                                       cwd=cwd)
                servers.append(server)
                client.spin_until(lambda: 'publishing /clock' in server.log(), line, 60)
            elif command.strip().endswith('&'):
                background.append(subprocess.Popen(
                    argv, cwd=cwd, env=env, text=True, stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT))
            elif 'open its URL' in comment:
                outputs.append(_open_served_page(argv, cwd, env, line))
            elif argv[:3] == ['ros2', 'param', 'set']:
                node, name, value = argv[3:6]
                assert node == client.server
                client.set_parameter(name, yaml.safe_load(value))
                outputs.append('')
            else:
                run = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                                     timeout=120)
                assert run.returncode == 0, (line, run.stdout + run.stderr,
                                             [server.log() for server in servers])
                outputs.append(run.stdout)
        wait()
        if check is not None:
            check(outputs)
    finally:
        for process in background:
            if process.poll() is None:
                process.kill()
        for server in servers:
            assert server.stop() == 0, server.log()
    return outputs


def test_the_readme_quick_start_as_typed(client, domain_id, tmp_path):
    """The Quick start's commands, in order: status, 100 frames of 1 ms, the rate, the panel."""
    block = _readme_block('sh', 'ros2 launch sim_clock sim_clock.launch.py')

    def check(outputs):
        status, step, _, panel = outputs
        assert panel.startswith('sim_clock panel of /sim_clock (control from this host): '
                                'http://127.0.0.1:'), panel
        assert 'sync on' in status, status
        now = client.status()
        assert now.frame == 100 and stamp_ns(now.clock) == 100 * 10**6, step
        assert client.get_parameter('real_time_factor') == 2.0
    _run_block(block, client, domain_id, str(tmp_path), check)


def test_the_readme_bag_block_as_typed(client, domain_id, tmp_path):
    """
    The bag block, in order: twice the same 2 s of my_bag recorded, and diff says the same.

    my_bag holds /fused every 50 ms for 3 s. Each recording holds the 41 messages of 0 to 2 s:
    the frame at 2 s publishes the one stamped 2 s before its /clock, which ends the recording.
    """
    block = _readme_block('sh', 'ros2 launch sim_clock bag_player.launch.py')
    write_string_bag(str(tmp_path / 'my_bag'),
                     [(START_NS + k * 50 * MS, '/fused', f'fused {k}') for k in range(61)])
    outputs = _run_block(block, client, domain_id, str(tmp_path))
    assert 'same' in outputs[-1], outputs
    for name in ('out_bag', 'out_bag_2'):
        with Reader(str(tmp_path / name)) as reader:
            assert reader.message_count == 41, (name, reader.message_count)
