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

"""Stop signals on the way out: ignored, and the report of one that came late dropped."""

import signal
import sys

import pytest
from sim_clock.process.stop_signals import hand_back_stop_signals
from sim_clock.process.stop_signals import ignore_stop_signals
from sim_clock.process.stop_signals import ignoring_late_stop_signals
from sim_clock.process.stop_signals import STOP_SIGNALS

pytestmark = pytest.mark.fast


class Unraisable:
    """What ``sys.unraisablehook`` is given: the error is all the hook reads."""

    def __init__(self, error):
        self.exc_value = error


def test_a_stop_signal_that_came_late_is_not_reported_and_nothing_else_is_hidden():
    """The unraisable report of a late SIGINT or SIGTERM is dropped; any other goes on."""
    reported = []
    hook = ignoring_late_stop_signals(reported.append)
    for number in (signal.SIGINT, signal.SIGTERM):
        hook(Unraisable(OSError(f'Signal {int(number)} ignored due to race condition')))
    assert reported == []
    others = [Unraisable(OSError('Signal 10 ignored due to race condition')),
              Unraisable(ValueError('Signal 2 ignored due to race condition')),
              Unraisable(OSError('disk full'))]
    for other in others:
        hook(other)
    assert reported == others


def test_once_ignored_both_signals_are_and_the_hook_is_wrapped_once():
    """SIG_IGN for SIGINT and SIGTERM; a second call wraps the unraisable hook no further."""
    handlers = {number: signal.getsignal(number) for number in STOP_SIGNALS}
    hook = sys.unraisablehook
    reported = []
    sys.unraisablehook = reported.append
    try:
        ignore_stop_signals()
        wrapped = sys.unraisablehook
        ignore_stop_signals()
        assert sys.unraisablehook is wrapped
        assert [signal.getsignal(number) for number in STOP_SIGNALS] == [signal.SIG_IGN] * 2
        sys.unraisablehook(Unraisable(OSError('Signal 2 ignored due to race condition')))
        other = Unraisable(OSError('disk full'))
        sys.unraisablehook(other)
        assert reported == [other]
    finally:
        sys.unraisablehook = hook
        for number, handler in handlers.items():
            signal.signal(number, handler)


def test_handed_back_the_handlers_of_before_return_unless_a_signal_came():
    """No signal taken: the handlers of before; one taken: both ignored."""
    handlers = {number: signal.getsignal(number) for number in STOP_SIGNALS}
    hook = sys.unraisablehook

    def own(signum, frame):
        pass
    try:
        for took_one, expected in ((False, handlers), (True, dict.fromkeys(handlers,
                                                                           signal.SIG_IGN))):
            previous = {number: signal.signal(number, own) for number in STOP_SIGNALS}
            hand_back_stop_signals(previous, took_one)
            assert {number: signal.getsignal(number) for number in STOP_SIGNALS} == expected
            for number, handler in handlers.items():
                signal.signal(number, handler)
    finally:
        sys.unraisablehook = hook
        for number, handler in handlers.items():
            signal.signal(number, handler)
