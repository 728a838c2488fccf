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
The bag player's keyboard controls on the user's terminal, as ``ros2 bag play``'s.

Space pauses or resumes, the right arrow plays the next message's frame, the up and down arrows
make the rate 10 % faster or slower. Only where standard input is the process's controlling
terminal in the foreground (a player in the background, or under ``ros2 launch``, reads no
keys: reading would stop it with SIGTTIN); ``--disable-keyboard-controls`` turns them off.
The terminal reads keys one by one without echo meanwhile (cbreak: Ctrl-C still signals),
and is put back as it was when the player ends.
"""

import atexit
import os
import select
import termios
import tty
from typing import Callable
from typing import Dict
from typing import Optional
from typing import Protocol

#: What each key asks for: the bytes a terminal sends for it (arrows in both cursor modes).
KEYS: Dict[bytes, str] = {
    b' ': 'toggle_paused',
    b'\x1b[C': 'play_next', b'\x1bOC': 'play_next',
    b'\x1b[A': 'faster', b'\x1bOA': 'faster',
    b'\x1b[B': 'slower', b'\x1bOB': 'slower',
}
#: How the up and down arrows change the rate: by 10 %, as rosbag2's.
RATE_STEP = 0.1
#: Said once at the start, where the keys are read.
HELP = ('keyboard controls: space pause/resume, right arrow play next, up/down arrows rate '
        '+/-10 % (--disable-keyboard-controls turns them off)')


class Actions(Protocol):
    """What the keys do (:class:`~sim_clock.bag.playback_services.PlaybackServices`)."""

    def toggle_paused(self):
        """Resume if paused, else pause; return an answer (success, message)."""

    def play_next(self, reply: Callable) -> None:
        """Play the next message's frame; ``reply`` is given the answer."""

    def set_rate(self, rate: float):
        """Set the rate; return an answer."""

    def rate(self) -> float:
        """Return the rate."""


def keys_in(data: bytes) -> list:
    """Return the actions of the keys in ``data``, in order; other bytes are skipped."""
    actions = []
    while data:
        for sequence, action in KEYS.items():
            if data.startswith(sequence):
                actions.append(action)
                data = data[len(sequence):]
                break
        else:
            # An escape sequence we do not take is skipped whole (ESC [ ... final byte).
            if data.startswith(b'\x1b[') or data.startswith(b'\x1bO'):
                end = next((k for k in range(2, len(data)) if 0x40 <= data[k] <= 0x7e),
                           len(data) - 1)
                data = data[end + 1:]
            else:
                data = data[1:]
    return actions


def user_terminal(fd: int) -> bool:
    """Whether ``fd`` is this process's controlling terminal, with its group in the foreground."""
    try:
        return os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:  # a terminal, but not this process's controlling one
        return False


class Keyboard:
    """
    Read the keys of terminal ``fd`` (call :meth:`poll` often) and carry out their actions.

    ``log(line)`` says what each key did.
    """

    def __init__(self, fd: int, actions: Actions, log: Callable[[str], None]):
        self._fd, self._actions, self._log = fd, actions, log
        self._saved: Optional[list] = termios.tcgetattr(fd)
        tty.setcbreak(fd, termios.TCSANOW)
        atexit.register(self.close)
        log(HELP)

    def poll(self) -> None:
        """Take the keys typed since the last call, without waiting."""
        if self._saved is None or not select.select([self._fd], [], [], 0)[0]:
            return
        try:
            data = os.read(self._fd, 1024)
        except OSError:  # the terminal went away
            self.close()
            return
        for action in keys_in(data):
            self._do(action)

    def _do(self, action: str) -> None:
        actions = self._actions
        if action == 'toggle_paused':
            self._said('space', actions.toggle_paused())
        elif action == 'play_next':
            actions.play_next(lambda answer: self._said('right arrow', answer))
        else:
            factor = 1 + RATE_STEP if action == 'faster' else 1 - RATE_STEP
            key = 'up arrow' if action == 'faster' else 'down arrow'
            self._said(key, actions.set_rate(actions.rate() * factor))

    def _said(self, key: str, answer) -> None:
        self._log(f'{key}: {answer.message}' if answer.success
                  else f'{key}: refused: {answer.message}')

    def close(self) -> None:
        """Put the terminal back as it was; read no more keys. Once."""
        saved, self._saved = self._saved, None
        if saved is not None:
            try:
                termios.tcsetattr(self._fd, termios.TCSANOW, saved)
            except (termios.error, OSError):  # the terminal went away
                pass
