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
``sim_clock.process.process_exit``: what the user sees of an exit is kept, the teardown skipped.

Each case runs a child Python twice, once ending with ``sys.exit`` and once with
``exit_without_teardown``, its stdout and stderr pipes (block-buffered): both must print the
same and end with the same code; only the interpreter's teardown differs.
"""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.process

#: Run before each case's own code: an object whose finalizer speaks when the interpreter
#: tears the module down, an atexit function, and output left in the buffers of Python and C.
PRELUDE = """
import atexit, ctypes, sys, threading, time
from sim_clock.process.process_exit import exit_without_teardown


class TornDown:
    def __del__(self):
        sys.stdout.write('torn down\\n')


torn_down = TornDown()
atexit.register(lambda: print('atexit ran'))
print('answer line 1')
sys.stdout.write('answer, no newline')
sys.stderr.write('a reason, no newline')
ctypes.CDLL(None).printf(b'from C stdio\\n')
"""


def _run(tmp_path, body: str, end: str) -> subprocess.CompletedProcess:
    # Run elsewhere than the repository, whose sim_clock/ would shadow the install; buffered
    # as a user's process is (PYTHONUNBUFFERED would make Python's and C's stdio write at once).
    env = {name: value for name, value in os.environ.items() if name != 'PYTHONUNBUFFERED'}
    return subprocess.run(
        [sys.executable, '-c', PRELUDE + body.replace('END', end)], cwd=tmp_path, env=env,
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize('code', [0, 1, 3, 130])
def test_output_and_exit_code_kept_and_the_teardown_skipped(tmp_path, code):
    """Python's and C's buffered output, atexit's, and the code; no finalizer at teardown."""
    usual = _run(tmp_path, f'END({code})', 'sys.exit')
    fast = _run(tmp_path, f'END({code})', 'exit_without_teardown')
    assert usual.returncode == fast.returncode == code
    assert usual.stderr == fast.stderr == 'a reason, no newline'
    # C's stdout first, then Python's (atexit's line last): the order of Python's own exit.
    assert fast.stdout == 'from C stdio\nanswer line 1\nanswer, no newlineatexit ran\n'
    assert usual.stdout.replace('torn down\n', '') == fast.stdout
    assert 'torn down' in usual.stdout and 'torn down' not in fast.stdout


def test_none_is_0_and_other_codes_end_as_python_ends_them(tmp_path):
    """None: exit code 0; a message: printed to stderr, exit code 1 (as sys.exit)."""
    assert _run(tmp_path, 'END(None)', 'exit_without_teardown').returncode == 0
    for end in ('sys.exit', 'exit_without_teardown'):
        result = _run(tmp_path, "END('gave up')", end)
        assert (result.returncode, result.stderr) == (1, 'a reason, no newlinegave up\n'), end


def test_a_running_thread_is_waited_for_as_python_waits(tmp_path):
    """A non-daemon thread still running: Python's own exit, which waits for it."""
    body = """
def late():
    time.sleep(0.5)
    print('thread done', flush=True)
threading.Thread(target=late).start()
END(4)
"""
    for end in ('sys.exit', 'exit_without_teardown'):
        result = _run(tmp_path, body, end)
        assert result.returncode == 4, (end, result.stderr)
        assert 'thread done\n' in result.stdout, (end, result.stdout)


def test_a_reader_gone_ends_as_python_ends_it(tmp_path):
    """A reader of stdout gone: the flush fails; Python's exit reports it, with code 120."""
    body = """
import os
read_end, write_end = os.pipe()
os.close(read_end)
os.dup2(write_end, sys.stdout.fileno())
print('nobody reads this')
END(0)
"""
    usual = _run(tmp_path, body, 'sys.exit')
    fast = _run(tmp_path, body, 'exit_without_teardown')
    assert usual.returncode == fast.returncode == 120
    assert 'BrokenPipeError' in usual.stderr and 'BrokenPipeError' in fast.stderr, fast.stderr
