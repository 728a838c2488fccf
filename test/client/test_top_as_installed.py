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
``simclock top`` as installed, against a clock server and two participants in processes.

The server steps in sync mode; 'planner' works 100 ms in one frame of every ten, 'tracker'
finishes each frame at once. ``top --once`` names planner first with its 100 ms holds, the
figures of the server's own events; with the ring off it says how to turn it on. On a
pseudo-terminal the live view shows it, ends on ``q`` and on Ctrl-C with exit code 0, and
leaves the terminal's modes as they were. The view's figures to the digit:
test/client/test_top.py.
"""

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time

from frame_timeline import check_worked_holds
from frame_timeline import SLOW_PARTICIPANT
from frame_timeline import SLOW_WORK_NS
from harness import ChildProcess
from harness import executable
from harness import TIMEOUT
import pytest
from sim_clock.core.frame_events import DONE
from sim_clock.core.frame_events import FrameEvent
from sim_clock.core.frame_stats import holders
from sim_clock.core.frame_stats import wall_ns
from sim_clock.srv import GetFrameEvents

pytestmark = pytest.mark.process

MS = 1_000_000
#: The slow participant's work, one frame in ten, in ns.
WORK_NS = SLOW_WORK_NS
FRAMES = 50
#: Run a command with the pseudo-terminal on its stdin as its controlling terminal, in a
#: session of its own (as a shell in a terminal window starts it): Ctrl-C typed there then
#: sends SIGINT to it.
ON_TERMINAL = ('import fcntl, os, sys, termios; os.setsid(); '
               'fcntl.ioctl(0, termios.TIOCSCTTY, 0); os.execv(sys.argv[1], sys.argv[1:])')
#: What the live view writes on entering and on leaving (sim_clock.client.top).
ENTER_SCREEN = b'\x1b[?1049h'
LEAVE_SCREEN = b'\x1b[?25h\x1b[?1049l'


@pytest.fixture
def stepped(start_server, client, domain_id, tmp_path):
    """Start a sync-mode server and the two participants; step 50 frames; return planner's."""
    start_server({'sync': True, 'time_step': 0.01})
    client.status_when_ready()
    children = [ChildProcess(domain_id, SLOW_PARTICIPANT, str(tmp_path), args=(name, work))
                for name, work in (('planner', WORK_NS / 1e9), ('tracker', 0.0))]
    for child in children:
        child.expect('joined')
    client.spin_until(lambda: sorted(client.status().participants) == ['planner', 'tracker'],
                      'both participants joined')
    answer = client.step('', FRAMES)
    assert answer.success, answer.message
    yield children[0]
    for child in children:
        child.stop()


def _env(domain_id: int) -> dict:
    """Return the environment of a simclock process on this test's domain, no set width."""
    env = {key: value for key, value in os.environ.items() if key not in ('COLUMNS', 'LINES')}
    env.update(ROS_DOMAIN_ID=str(domain_id), TERM='xterm')
    return env


def _simclock_top_once(domain_id: int, *args) -> str:
    """Run ``simclock top --once`` (stdout a pipe); return what it printed, checked plain."""
    result = subprocess.run(
        [executable('simclock'), 'top', '--once', *args], env=_env(domain_id),
        capture_output=True, text=True, timeout=2 * TIMEOUT)
    assert result.returncode == 0, result.stderr + result.stdout
    assert '\x1b' not in result.stdout, repr(result.stdout)
    return result.stdout


def _server_events(client) -> list:
    """Return every event the server's ring holds, as ``~/get_frame_events`` gives them."""
    response = client.call(GetFrameEvents, 'get_frame_events', GetFrameEvents.Request())
    return [FrameEvent(e.sequence, e.kind, e.epoch, e.sim_ns, e.start_ns, e.end_ns, e.name,
                       e.count, e.success, e.detail) for e in response.events]


def test_once_prints_the_slow_participant_first_with_its_holds(stepped, client, domain_id):
    """
    ``top --once``: plain text; planner first, with the holds the server recorded.

    Its table is the server's own events counted (every event is in the 60 s window, and
    none is recorded while nobody steps): each row to the printed digit. Planner held each
    of the 50 frames, 5 of them for its work: its p99 (with 50 frames, its longest hold) is at
    least the work, and each of those 5 holds contains the work it timed
    (``frame_timeline.check_worked_holds``).
    """
    out = _simclock_top_once(domain_id, '--window', '60')
    lines = out.splitlines()
    assert lines[0] == f'frame {FRAMES}  time 0.500000000 s  epoch 0  simulation, sync on', out
    assert lines[1].startswith('real-time factor: '), out
    assert lines[1].endswith(f'x over the {FRAMES} frames of the last 60 s'), out
    assert lines[2].startswith(f'holding frame {FRAMES}: nothing (it went out '), out
    heading = lines.index('holds in the last 60 s, slowest first:') + 1
    assert lines[heading].split() == ['name', 'frames', 'p50', 'ms', 'p99', 'ms', 'max', 'ms',
                                      'share', 'kind'], out
    events = _server_events(client)
    wall = wall_ns(events)
    assert [line.split() for line in lines[heading + 1:]] == [
        [h.name, str(len(h.holds_ns)), f'{h.p50_ns / MS:.3f}', f'{h.p99_ns / MS:.3f}',
         f'{h.max_ns / MS:.3f}', f'{h.share(wall) * 100:.1f}%', h.kind]
        for h in holders(events)], out
    planner, tracker = holders(events)
    assert (planner.name, tracker.name) == ('planner', 'tracker'), out
    assert len(planner.holds_ns) == len(tracker.holds_ns) == FRAMES, out
    assert planner.p99_ns >= WORK_NS, out
    holds = {e.sim_ns: e.duration_ns for e in events if e.kind == DONE and e.name == 'planner'}
    worked = {}
    for _ in range(FRAMES // 10):  # the work as planner timed it (a sleep overshoots on load)
        time_ns, work_ns = stepped.expect('worked').split()[-2:]
        worked[int(time_ns)] = int(work_ns)
    check_worked_holds(holds, worked)


def test_once_says_when_the_server_records_nothing(start_server, client, domain_id):
    """A server started with frame_events 0: top says its ring is off and how to turn it on."""
    start_server({'sync': True, 'frame_events': 0})
    client.status_when_ready()
    out = _simclock_top_once(domain_id)
    assert out.splitlines()[1:] == [
        'holding frame 0: nothing',
        'the server records no frame events: its ring is off (parameter frame_events is 0).',
        'turn it on: ros2 param set /sim_clock frame_events 10000',
        '        or: start the server with -p frame_events:=10000'], out


def _read_until(master: int, text: bytes, output: bytearray, deadline: float) -> None:
    """Read the terminal's output until it holds ``text``; fail at ``deadline``."""
    while text not in output:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f'no {text!r} in time; the terminal showed:\n{bytes(output)!r}'
        if select.select([master], [], [], remaining)[0]:
            output += os.read(master, 65536)


def _drain_until_exit(process: subprocess.Popen, master: int, output: bytearray,
                      deadline: float) -> int:
    """Read the terminal's output until the process has ended; its exit code."""
    while process.poll() is None:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f'still running; the terminal showed:\n{bytes(output)[-2000:]!r}'
        if select.select([master], [], [], min(remaining, 0.1))[0]:
            output += os.read(master, 65536)
    while select.select([master], [], [], 0)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break  # nothing more: the terminal's other end is closed
        if not chunk:
            break
        output += chunk
    return process.returncode


@pytest.mark.parametrize('key', [b'q', b'\x03'], ids=['q', 'ctrl-c'])
def test_live_view_on_a_terminal_ends_on_a_key_and_restores_the_terminal(
        stepped, domain_id, key):
    """
    On a pseudo-terminal of 30 x 100: drawn in place until planner shows; ``key`` ends it.

    While it runs the terminal is in cbreak mode (no echo, no line editing); q or Ctrl-C
    ends it with exit code 0, the alternate screen left and the modes as they were before.
    """
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack('HHHH', 30, 100, 0, 0))
    before = termios.tcgetattr(slave)
    process = subprocess.Popen(
        [sys.executable, '-c', ON_TERMINAL, executable('simclock'), 'top', '--window', '60',
         '--interval', '0.2'],
        stdin=slave, stdout=slave, stderr=slave, env=_env(domain_id))
    output = bytearray()
    try:
        _read_until(master, b'planner', output, time.monotonic() + 2 * TIMEOUT)
        running = termios.tcgetattr(slave)
        assert not running[3] & (termios.ICANON | termios.ECHO), 'not in cbreak mode'
        assert output.startswith(ENTER_SCREEN), bytes(output[:200])
        os.write(master, key)
        code = _drain_until_exit(process, master, output, time.monotonic() + TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    after = termios.tcgetattr(slave)
    os.close(master)
    os.close(slave)
    assert code == 0, bytes(output[-2000:])
    assert b'Traceback' not in output, bytes(output)
    assert output.endswith(LEAVE_SCREEN), bytes(output[-200:])
    assert after == before
