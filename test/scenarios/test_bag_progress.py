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

"""Replay progress through a real bag player: ~/get_progress over DDS, the line on a terminal."""

import fcntl
import os
import re
import select
import signal
import subprocess
import termios
import time

from bags import MS
from bags import START_NS
from bags import write_test_bag
from harness import executable
from harness import NS
from harness import stamp_ns
from harness import TIMEOUT
import pytest
from sim_clock.testing import parameter_arguments

pytestmark = pytest.mark.process

STEP = 10 * MS
SYNC = {'sync': True, 'time_step': STEP / NS}
#: The test bag's last message (/chatter every 100 ms up to 1 s): its end.
END_NS = START_NS + 1000 * MS
#: A progress line as drawn: back to the line's start, the text, erase the rest.
LINE = re.compile(r'\rbag (\d+)\.(\d{3}) s +(\d+\.\d)% +(\d+)/(\d+) msgs +(\S+)x  left ([^\r]+?)'
                  r'\x1b\[K\r')


@pytest.fixture
def sqlite_bag(tmp_path):
    """Return (path, records) of a one-second sqlite3 test bag."""
    path = str(tmp_path / 'bag_sqlite3')
    return path, write_test_bag(path, 'sqlite3')


def _progress(client):
    from sim_clock.srv import GetProgress
    return client.call_idempotent(GetProgress, 'get_progress')


def _seek(client, time_ns):
    from sim_clock.srv import Seek
    request = Seek.Request()
    request.time.sec, request.time.nanosec = divmod(time_ns, NS)
    return client.call(Seek, 'seek', request)


def _out_between(records, after_ns, up_to_ns) -> int:
    """Return how many messages that play are stamped in [after_ns, up_to_ns]."""
    return sum(after_ns <= r.time_ns <= up_to_ns for r in records)


def test_get_progress_counts_exactly_through_steps_seeks_and_resets(
        start_server, client, sqlite_bag):
    """Messages out and bag time after each step, seek and reset, exact; percent and the end."""
    path, records = sqlite_bag
    server = start_server(SYNC, argv=[path], executable=executable('bag_player'))
    client.status_when_ready()
    progress = _progress(client)
    assert (stamp_ns(progress.bag_time), stamp_ns(progress.start), stamp_ns(progress.end)) == (
        START_NS, START_NS, END_NS)
    assert (progress.percent, progress.messages_out, progress.messages_total) == (
        0.0, 0, len(records))
    assert (progress.epoch, progress.time_left) == (0, -1.0)

    assert client.step('', 30).success
    progress = _progress(client)
    now = START_NS + 30 * STEP
    assert stamp_ns(progress.bag_time) == now and progress.percent == pytest.approx(30.0)
    assert progress.messages_out == _out_between(records, START_NS, now) > 0

    target = START_NS + 500 * MS
    assert _seek(client, target).success
    progress = _progress(client)
    assert (stamp_ns(progress.bag_time), progress.messages_out, progress.epoch) == (
        target, 0, 1)
    assert client.step('', 5).success
    progress = _progress(client)
    assert progress.messages_out == _out_between(records, target, target + 5 * STEP) > 0
    assert client.step('', 45).success
    progress = _progress(client)
    assert stamp_ns(progress.bag_time) == END_NS
    assert progress.messages_out == _out_between(records, target, END_NS)
    assert (progress.percent, progress.time_left) == (100.0, 0.0)

    assert client.trigger('reset').success
    assert client.step('', 101).success  # one frame past the end: sync mode steps on
    progress = _progress(client)
    assert (progress.messages_out, progress.epoch, progress.percent) == (len(records), 2, 100.0)
    assert stamp_ns(progress.bag_time) == END_NS + STEP
    assert '\r' not in server.log() and ' msgs ' not in server.log()  # sync mode: no line


def _take_as_controlling_terminal():
    fcntl.ioctl(2, termios.TIOCSCTTY, 0)


class TerminalPlayer:
    """
    A bag player whose stdout and stderr are a pseudo-terminal, read here.

    ``controlling``: the terminal is the player's session's own, as the one a user types in;
    else a terminal handed to it, as ``ros2 launch`` hands one with ``emulate_tty``.
    ``keys``: its standard input is the terminal too, where :meth:`press` types.
    """

    def __init__(self, domain_id: int, argv, params: dict, controlling: bool = True,
                 keys: bool = False):
        master, slave = os.openpty()
        self._master = master
        self.output = ''
        self.process = subprocess.Popen(
            [executable('bag_player'), *argv, '--ros-args', *parameter_arguments(params)],
            env=dict(os.environ, ROS_DOMAIN_ID=str(domain_id)),
            stdin=slave if keys else subprocess.DEVNULL,
            stdout=slave, stderr=slave, start_new_session=True,
            preexec_fn=_take_as_controlling_terminal if controlling else None)
        os.close(slave)

    def read_until(self, condition, what: str, timeout: float = 2 * TIMEOUT) -> str:
        """Read the terminal until ``condition(output)`` holds; fail naming ``what``."""
        deadline = time.monotonic() + timeout
        while not condition(self.output):
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([self._master], [], [], max(remaining, 0))
            if not ready:
                raise AssertionError(f'no {what} on the terminal within {timeout} s:\n'
                                     + repr(self.output))
            self._read()
        return self.output

    def press(self, keys: bytes) -> None:
        """Type ``keys`` on the terminal, as a user would."""
        os.write(self._master, keys)

    def _read(self) -> bool:
        try:
            chunk = os.read(self._master, 65536)
        except OSError:  # EIO: every writer closed the terminal
            chunk = b''
        if not chunk:
            raise AssertionError(f'the player closed the terminal:\n{self.output!r}')
        self.output += chunk.decode(errors='replace')
        return True

    def stop(self) -> int:
        """SIGINT, read the rest and return the exit code."""
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(TIMEOUT)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        while select.select([self._master], [], [], 0)[0]:
            try:
                chunk = os.read(self._master, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.output += chunk.decode(errors='replace')
        os.close(self._master)
        return self.process.returncode


def test_free_run_shows_one_updating_line_on_a_terminal(domain_id, sqlite_bag):
    """On a terminal: a line rewritten in place, percent rising to 100, every message out."""
    path, records = sqlite_bag
    player = TerminalPlayer(domain_id, [path], {'real_time_factor': 0.5, 'time_step': 0.01})
    try:
        output = player.read_until(
            lambda out: any(m.group(3) == '100.0' for m in LINE.finditer(out)),
            'progress line at 100 %')
        # The last line stays above the end-of-bag log.
        player.read_until(lambda out: 'end of the bag' in out, 'end of the bag')
    finally:
        code = player.stop()
    assert code == 0, player.output
    lines = list(LINE.finditer(output))
    percents = [float(m.group(3)) for m in lines]
    assert len({p for p in percents if 0 < p < 100}) >= 2, output  # updated while playing
    assert percents == sorted(percents)
    final = next(m for m in lines if m.group(3) == '100.0')
    assert (int(final.group(4)), int(final.group(5))) == (len(records), len(records))
    assert 'Traceback' not in player.output


def test_no_progress_draws_no_line(domain_id, sqlite_bag):
    """--no-progress: the bag plays to its end with no progress line on the terminal."""
    path, _ = sqlite_bag
    player = TerminalPlayer(domain_id, [path, '--no-progress'], {'real_time_factor': 4.0})
    try:
        player.read_until(lambda out: 'end of the bag' in out, 'end of the bag')
    finally:
        code = player.stop()
    assert code == 0 and ' msgs ' not in player.output, player.output


def test_without_a_terminal_progress_goes_to_the_log(start_server, client, sqlite_bag):
    """Without a terminal: the progress line in the log, every 5 s at most, while playing."""
    path, records = sqlite_bag
    server = start_server({'real_time_factor': 0.15}, argv=[path],
                          executable=executable('bag_player'))
    client.spin_until(lambda: ' msgs ' in server.log(), 'a progress line in the log', 30)
    assert server.process.wait(timeout=30) == 0, server.log()
    lines = [line for line in server.log().splitlines() if ' msgs ' in line]
    assert 1 <= len(lines) <= 2, lines  # 6.7 s of playing: at 5 s (and 10 s if it lagged)
    assert lines[0].startswith('[INFO]') and f'/{len(records)} msgs' in lines[0], lines
    assert '\r' not in server.log()


def test_on_a_terminal_launch_hands_over_progress_goes_to_the_log(domain_id, sqlite_bag):
    """A pseudo-terminal not its own (ros2 launch's): full log lines while playing, no CR."""
    path, records = sqlite_bag
    player = TerminalPlayer(domain_id, [path], {'real_time_factor': 0.15}, controlling=False)
    try:
        player.read_until(lambda out: ' msgs ' in out, 'progress line in the log', 30)
        playing = 'end of the bag' not in player.output
        player.read_until(lambda out: 'end of the bag' in out, 'end of the bag', 30)
    finally:
        code = player.stop()
    assert code == 0, player.output
    # The terminal turns each \n into \r\n: no other \r, so no line rewritten in place.
    output = player.output.replace('\r\n', '\n')
    assert '\r' not in output and '\x1b[K' not in output, repr(player.output)
    lines = [line for line in output.splitlines() if ' msgs ' in line]
    assert playing and 1 <= len(lines) <= 2, output  # 6.7 s of playing: at 5 s (10 s if late)
    assert '[INFO]' in lines[0] and f'/{len(records)} msgs' in lines[0], lines
    assert '(end)' not in lines[0] and float(lines[0].split('%')[0].split()[-1]) < 100, lines
