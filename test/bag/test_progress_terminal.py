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

"""Where the bag player's progress goes, seen from a real child process on real terminals."""

import fcntl
import os
import subprocess
import sys
import termios

import pytest

pytestmark = pytest.mark.process

#: Run in a child: where its progress would go, seen from its stderr, first from the child,
#: then from a grandchild in a process group of its own (a background job of that terminal).
PROBE = """
import os, sys
from sim_clock.bag.progress import choose_output, probe_terminal
def show():
    print(choose_output(True, probe_terminal(sys.stderr)).value, flush=True)
show()
child = os.fork()
if child == 0:
    os.setpgid(0, 0)
    show()
    os._exit(0)
os.waitpid(child, 0)
"""


def _probe(tmp_path, stderr, **popen) -> list:
    # Run elsewhere than the repository, whose sim_clock/ (no srv/) would shadow the install.
    result = subprocess.run([sys.executable, '-c', PROBE], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=stderr, cwd=tmp_path, text=True,
                            timeout=60, check=True, **popen)
    return result.stdout.split()


def _take_as_controlling_terminal():
    fcntl.ioctl(2, termios.TIOCSCTTY, 0)


def test_the_probe_tells_launchs_pseudo_terminal_from_the_users_terminal(tmp_path):
    """Real pseudo-terminals: one made the session's terminal, one handed as ros2 launch does."""
    users, users_side = os.openpty()
    launchs, launchs_side = os.openpty()
    try:
        # A user's terminal: the session's controlling terminal (as a terminal emulator or
        # sshd makes it), the player in its foreground; a job put in the background logs.
        assert _probe(tmp_path, users_side, start_new_session=True,
                      preexec_fn=_take_as_controlling_terminal) == ['line', 'log']
        # osrf_pycommon (ros2 launch, emulate_tty): a new pseudo-terminal as stdout and
        # stderr of a process that stays in launch's session.
        assert _probe(tmp_path, launchs_side) == ['log', 'log']
        assert _probe(tmp_path, launchs_side, start_new_session=True) == ['log', 'log']
    finally:
        for fd in (users, users_side, launchs, launchs_side):
            os.close(fd)
    assert _probe(tmp_path, subprocess.PIPE) == ['log', 'log']  # a pipe
    with open(tmp_path / 'log.txt', 'w') as log_file:  # a file
        assert _probe(tmp_path, log_file) == ['log', 'log']
