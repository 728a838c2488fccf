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
End an executable once its work is done, without the middleware's teardown.

On ROS 2 Kilted (Fast DDS 3) a short-lived process such as ``simclock status`` ended, rarely,
by SIGSEGV after it had printed its answer: a crash of the middleware's teardown, a known
class (Fast DDS's singletons and participants torn down while the interpreter shuts down;
ros2/rmw_fastrtps#761, ros2/rosbag2#1311). Two places: the libraries' teardown at process
exit (fewer than 1 in 2,000 runs), and the node's own destruction (``rcl_node_fini``: 1 in
about 3,000 runs under load, with the first). :func:`exit_without_teardown` ends the process
with what Python's own exit would have done for the user (atexit functions, stdout and stderr
flushed, the exit code), then ``os._exit``: no interpreter finalization, no C or C++ static
destructor. :func:`end_without_teardown` runs an executable's main that way, and tells it
(:func:`ending_without_teardown`) that the exit follows: ``simclock`` then destroys its
endpoints, so that the server unmatches them at once, and keeps its node and context alive
until the exit (:func:`keep_until_exit`): dropped, the garbage collector would destroy them,
with the same teardown (a crash in 1 of about 1,900 runs, main's frame ending). It also ends
``simclock`` sooner: 8 ms from its answer to its exit on Kilted, against 140 ms.
"""

import atexit
import ctypes
import os
import sys
import threading
from typing import Callable


_ENDING = False
#: What the process keeps until it ends (:func:`keep_until_exit`): never destroyed.
_KEPT = []


def end_without_teardown(main: Callable[[], object]) -> None:
    """Run ``main()``, saying that the process ends next; then end it with its exit code."""
    global _ENDING
    _ENDING = True
    exit_without_teardown(main())


def ending_without_teardown() -> bool:
    """Whether the process ends without teardown once main returns (``end_without_teardown``)."""
    return _ENDING


def keep_until_exit(*objects) -> None:
    """
    Keep ``objects`` alive until the process ends: their destruction is skipped with the rest.

    A node or a context dropped before the exit would be destroyed then, by the garbage
    collector, with the same teardown (``rcl_node_fini``, the DDS participant's deletion).
    """
    _KEPT.extend(objects)


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
