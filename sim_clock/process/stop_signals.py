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
SIGINT and SIGTERM once a process took one and is on its way out: ignored to the end.

Under ``ros2 launch`` a terminal's Ctrl-C reaches the whole process group and launch forwards
another SIGINT a few ms later (and SIGTERM after 5 s). Whatever handler the process had before
would take that second one somewhere on the way out: Python's default raises
``KeyboardInterrupt`` in the middle of the last lines, and at the interpreter's exit Python
puts SIG_DFL back in place of its handlers, so that a signal then kills the process (exit
code -2). The executables' loop and the participant helper end their own handling with
:func:`hand_back_stop_signals`, which ignores both once they took one (doc/design.md,
"Ctrl-C").
"""

import signal
import sys
from typing import Callable

#: The signals that stop a process: Ctrl-C, and what ``ros2 launch`` and kill send.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def ignoring_late_stop_signals(hook: Callable) -> Callable:
    """
    Return ``sys.unraisablehook`` ``hook`` that says nothing of a stop signal that came late.

    A SIGINT that arrives while its Python handler is being replaced by SIG_IGN (launch's
    second SIGINT, a few ms after the terminal's) is found pending with no Python handler
    left, and CPython writes it out as an unraisable "Signal 2 ignored due to race condition"
    with a traceback. Ignoring it was the intent: only that report is dropped.
    """
    late = {f'Signal {int(number)} ignored due to race condition' for number in STOP_SIGNALS}

    def quiet(unraisable) -> None:
        if not (isinstance(unraisable.exc_value, OSError)
                and str(unraisable.exc_value) in late):
            hook(unraisable)
    quiet.drops_late_stop_signals = True
    return quiet


def ignore_stop_signals() -> None:
    """Ignore SIGINT and SIGTERM from now on, and say nothing of one that was on its way."""
    if not getattr(sys.unraisablehook, 'drops_late_stop_signals', False):
        sys.unraisablehook = ignoring_late_stop_signals(sys.unraisablehook)
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)


def hand_back_stop_signals(previous: dict, took_one: bool) -> None:
    """
    End a handling of SIGINT and SIGTERM of one's own: ignore both if it took one.

    ``previous``: signal number -> the handler ``signal.signal`` replaced, put back where no
    signal came.
    """
    if took_one:
        ignore_stop_signals()
        return
    for number, handler in previous.items():
        signal.signal(number, handler)
