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
End an executable once its work is done, without the middleware's teardown at exit.

On ROS 2 Kilted (Fast DDS 3) a short-lived process such as ``simclock status`` ended, rarely
(fewer than 1 in 2,000 runs), by SIGSEGV after it had printed its answer: a crash of the
libraries' teardown at process exit, a known class (static destructors of Fast
DDS's singletons, objects freed while the interpreter shuts down; ros2/rmw_fastrtps#761,
ros2/rosbag2#1311). By then the process has destroyed its nodes, and with the last one its
DDS participant, and shut its context down itself: that teardown has nothing left to do for
it. :func:`exit_without_teardown` ends the process with what Python's own exit would have
done for the user (atexit functions, stdout and stderr flushed, the exit code), then
``os._exit``: no interpreter finalization, no C or C++ static destructor. It also ends
``simclock`` sooner: 8 ms from its answer to its exit on Kilted, against 140 ms.

The destruction the process does itself before that still runs: a participant that ends
without its deletion leaves its shared-memory port behind, and the next ``simclock`` of that
host, given the same port, waited 2 to 3 times longer for its answer. It crashed too, once in
about 3,300 runs on Kilted, in Fast DDS 3's type lookup service (a reply thread writing
through the lookup's writer while ``rcl_node_fini`` deleted the participant); the
executables' profile turns that service off (doc/design.md, "Fast DDS type lookup").
"""

import atexit
import ctypes
import os
import sys
import threading


def exit_without_teardown(code) -> None:
    """
    End the process with exit code ``code`` (an int; None is 0) without the libraries' teardown.

    What Python's exit does that the user sees is done first, in its order: C's stdout is
    flushed (where rcutils may log), the atexit functions run, Python's stdout and stderr are
    flushed, then C's streams again. Where Python's exit would do more than that, it is left
    to do it, as ``sys.exit(code)``: a non-daemon thread still running (Python waits for
    it), stdout that cannot be flushed (a reader gone: Python reports it and exits with 120),
    ``code`` not an int (Python prints it).
    """
    if code is None:
        code = 0
    if not isinstance(code, int) or any(
            thread.is_alive() and not thread.daemon and thread is not threading.main_thread()
            for thread in threading.enumerate()):
        sys.exit(code)
    _flush_c_streams()
    # CPython's own call at exit; the one way to run the atexit functions before os._exit.
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is None:
            continue
        try:
            stream.flush()
        except (OSError, ValueError):
            sys.exit(code)
    _flush_c_streams()
    os._exit(code)


def _flush_c_streams() -> None:
    """Flush the C library's output streams (stdout, where rcutils logs with its settings)."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass
