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
The lease of sync mode: who holds it, who may step, start or stop it, and when it lapses.

MORAI's time manager gives sync mode to one user_id through ``SyncModeCmd``: the caller that
turns it on holds it, only the holder steps it or turns it off, and every refusal names the
holder. Beyond MORAI: the lease lapses once the holder has been silent for ``owner_timeout``
(0: never), and an operator (``~/set_sync``, a mode change) releases it. (A frame held back
for participants and gates is a hold, ``sim_clock.core.hold``: another idea.)
:class:`SyncLease` keeps the holder and its last call and decides who may;
:class:`~sim_clock.core.timeline.Timeline` applies what a change of holder does to time
(resets, change records). Integer nanoseconds, on an injected steady clock.
"""

from typing import Callable

from sim_clock.core.rules import check_owner_timeout_ns
from sim_clock.core.rules import Refused


class SyncLease:
    """The user_id that holds sync mode ('' when nobody does), and when its lease lapses."""

    def __init__(self, now_ns: Callable[[], int], timeout_ns: int = 0):
        self._now_ns = now_ns
        self._timeout_ns = check_owner_timeout_ns(timeout_ns)
        #: The user_id that holds sync mode, or '' (read it; :meth:`take` and
        #: :meth:`release` change it). A plain attribute: every step reads it.
        self.holder = ''
        self._seen_ns = 0

    @property
    def timeout_ns(self) -> int:
        """Return how long the holder may stay silent before its lease lapses (0: forever)."""
        return self._timeout_ns

    def set_timeout_ns(self, timeout_ns: int) -> None:
        """Let the lease lapse after ``timeout_ns`` without a call (0: never), counted from now."""
        self._timeout_ns = check_owner_timeout_ns(timeout_ns)
        self._seen_ns = self._now_ns()

    def take(self, user_id: str) -> None:
        """Give the lease to ``user_id``; its timeout counts from :meth:`heard_from`."""
        self.holder = user_id

    def release(self) -> str:
        """Let nobody hold sync mode; return who held it, or ''."""
        released, self.holder = self.holder, ''
        return released

    def heard_from(self) -> None:
        """Note a call from the holder: its lease lasts another timeout from now."""
        if self.holder:
            self._seen_ns = self._now_ns()

    def lapsed(self) -> bool:
        """Whether the holder has been silent for the whole timeout (never with timeout 0)."""
        if not self.holder or not self._timeout_ns:
            return False
        return self._now_ns() - self._seen_ns >= self._timeout_ns

    def refusal(self, reason: str) -> Refused:
        """Return a refusal for ``reason`` that names the holder, as MORAI's response does."""
        return Refused(reason, holder=self.holder)

    def check_step(self, user_id: str) -> None:
        """Refuse a step by ``user_id`` while another user_id holds sync mode."""
        if self.holder and user_id != self.holder:
            raise self.refusal(
                f'sync mode is held by {self.holder!r}; only that user_id may step')

    def check_command(self, user_id: str, start: bool) -> None:
        """Refuse ``user_id`` starting or stopping sync mode while another user_id holds it."""
        if self.holder and user_id != self.holder:
            verb = 'start' if start else 'stop'
            raise self.refusal(
                f'sync mode is held by {self.holder!r}; another user_id cannot {verb} it '
                f'(the holder releases it, or an operator calls ~/set_sync false)')
