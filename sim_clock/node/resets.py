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

"""Every change in the log, and every reset as a message on ``~/resets``."""

from typing import Callable

from sim_clock.core.state import Change
from sim_clock.core.state import ChangeKind
from sim_clock.msg import Reset
from sim_clock.wire.names import RESET_QOS
from sim_clock.wire.names import RESETS_TOPIC
from sim_clock.wire.status import time_msg


def log_change(logger, change: Change, at_ns: int) -> None:
    """Log a change of the timeline; ``at_ns``: the /clock time after it."""
    if change.reset:
        logger.info(f'time reset to {at_ns} ns (epoch {change.epoch}): {change.cause}')
    elif change.kind in (ChangeKind.PAUSE, ChangeKind.RESUME):
        logger.info(f'time {change.kind.value}d at {at_ns} ns')
    elif change.kind is ChangeKind.LAPSE:
        logger.warning(change.cause)
    else:
        logger.debug(change.cause)


class ResetEvents:
    """
    Publish a :class:`~sim_clock.msg.Reset` on ``publisher`` for each reset it is told of.

    ``to_clock``: timeline time to /clock time (a bag player's offset included), the times the
    message carries. The publisher is reliable and transient local, depth 1
    (:func:`create_publisher`), so that a node that starts late learns of the last reset.
    """

    def __init__(self, publisher, to_clock: Callable[[int], int]):
        self._publisher = publisher
        self._to_clock = to_clock

    def on_change(self, change: Change) -> None:
        """Publish ``change`` if it is a reset; a change listener."""
        if not change.reset:
            return
        to_clock = self._to_clock
        self._publisher.publish(Reset(
            epoch=change.epoch, time_before=time_msg(to_clock(change.time_before_ns)),
            time_after=time_msg(to_clock(change.time_after_ns)), cause=change.cause,
            mode=change.mode.value, sync=change.sync))


def create_publisher(create_publisher: Callable):
    """Make the ``~/resets`` publisher with ``create_publisher`` (a node's)."""
    return create_publisher(Reset, RESETS_TOPIC, RESET_QOS)
