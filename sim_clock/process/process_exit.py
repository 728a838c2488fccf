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

:func:`exit_without_teardown` is for a process that has destroyed its nodes and shut its
context down itself: its DDS participant is then deleted in order, its shared-memory port with
it (a port left behind slows the next process of the host that is given it). It then ends
the process with what Python's own exit does for the user (atexit functions, stdout and stderr
flushed, the exit code) and ``os._exit``: no interpreter finalization and no C or C++ static
destructor. The libraries' teardown at process exit is a
known source of crashes after the work is done (static destructors of Fast DDS's singletons,
objects freed while the interpreter shuts down; ros2/rmw_fastrtps#761, ros2/rosbag2#1311),
and a short-lived command such as ``simclock status`` has nothing left for it to do.
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
