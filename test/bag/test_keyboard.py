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

"""The keyboard controls: keys from a pseudo-terminal, their actions, the terminal put back."""

import os
import termios

import pytest
from sim_clock.bag.keyboard import Keyboard
from sim_clock.bag.keyboard import keys_in
from sim_clock.bag.keyboard import user_terminal
from sim_clock.node.outcomes import Answer

pytestmark = pytest.mark.fast


class Actions:
    """The player's actions, as a small fake: each records what it was asked."""

    def __init__(self):
        self.asked = []
        self._rate = 1.0

    def toggle_paused(self):
        self.asked.append('toggle_paused')
        return Answer(True, 'time paused at 0 ns')

    def play_next(self, reply):
        self.asked.append('play_next')
        reply(Answer(False, 'playing: ~/play_next plays ...'))

    def set_rate(self, rate):
        self.asked.append(('set_rate', rate))
        self._rate = rate
        return Answer(True, f'real_time_factor = {rate!r}')

    def rate(self):
        return self._rate


def test_keys_in_takes_space_and_arrows_in_both_cursor_modes():
    """Other bytes and escape sequences are skipped whole."""
    assert keys_in(b' \x1b[C\x1bOA x\x1b[5~\x1b[B\x1bOC') == [
        'toggle_paused', 'play_next', 'faster', 'toggle_paused', 'slower', 'play_next']
    assert keys_in(b'q\x1b[1;5D') == []


@pytest.fixture
def terminal():
    """Return (master, slave) of a new pseudo-terminal; closed at the end."""
    master, slave = os.openpty()
    yield master, slave
    os.close(master)
    os.close(slave)


def test_keys_typed_act_and_the_terminal_is_put_back(terminal):
    """Space, arrows: each action once, said in the log; close restores echo and lines."""
    master, slave = terminal
    before = termios.tcgetattr(slave)
    actions, log = Actions(), []
    keyboard = Keyboard(slave, actions, log.append)
    assert not termios.tcgetattr(slave)[3] & (termios.ICANON | termios.ECHO)  # cbreak
    keyboard.poll()  # nothing typed: nothing done, no wait
    assert actions.asked == []
    os.write(master, b' \x1b[A\x1b[B\x1b[C')
    keyboard.poll()
    assert actions.asked == ['toggle_paused', ('set_rate', 1.1), ('set_rate', 1.1 * 0.9),
                             'play_next']
    assert log[1:] == ['space: time paused at 0 ns', 'up arrow: real_time_factor = 1.1',
                       f'down arrow: real_time_factor = {1.1 * 0.9!r}',
                       'right arrow: refused: playing: ~/play_next plays ...']
    keyboard.close()
    assert termios.tcgetattr(slave) == before
    os.write(master, b' ')
    keyboard.poll()  # closed: reads no more keys
    assert len(actions.asked) == 4


def test_only_the_controlling_terminal_in_the_foreground_is_the_users(terminal):
    """A pseudo-terminal that is not this process's controlling one, and no terminal: no keys."""
    _, slave = terminal
    assert not user_terminal(slave)
    assert not user_terminal(-1)
    read, write = os.pipe()
    try:
        assert not user_terminal(read)
    finally:
        os.close(read)
        os.close(write)
