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

"""A bag's run under flow control: played to the end through spent budgets and refusals."""

from sim_clock.bag.cursor import Run
from sim_clock.bag.replay import DROPPED
from sim_clock.bag.replay import PublishRefused
from sim_clock.node.flow import FlowControl
from sim_clock.node.flow import WAIT_TIMEOUT_NS


def paced(flow: FlowControl, run: Run) -> Run:
    """
    Return ``run`` (a bag cursor's run, spending ``flow.budgets``) played to the end.

    Each time ``run`` stops on a spent budget, wait for the acknowledgements, refill, and
    call it again from where it stopped. Each time it raises ``PublishRefused``, call it
    again from the refused message once that writer's readers have caught up; if they do
    not within ``WAIT_TIMEOUT_NS``, or the same message is refused again, that writer is left
    out (``DROPPED``) until ``flow.start()``.
    """
    budgets = flow.budgets

    def flowing(batch, index, frames, offset_ns):
        done, refused_at = 0, None
        while True:
            try:
                finished, index = run(batch, index, frames[done:], offset_ns)
            except PublishRefused as refusal:
                if not flow.context_ok:
                    raise  # shut down while publishing: the caller ends
                done += refusal.done
                index = refusal.index
                at = (refusal.which, done, index)
                if at == refused_at or not flow.caught_up(refusal.which):
                    _left_out(flow, refusal)
                refused_at = at
                continue
            done += finished
            if 0 not in budgets:
                return done, index
            flow.refill()
    return flowing


def _left_out(flow: FlowControl, refusal: PublishRefused) -> None:
    flow.budgets[refusal.which] = DROPPED
    flow.logger.warning(
        f'{flow.topic(refusal.which)} refused a sample ({refusal}) and its readers did not '
        f'catch up within {WAIT_TIMEOUT_NS / 1e9:g} s: it publishes nothing more in these '
        'frames (this step, or this tick of free run)', throttle_duration_sec=5.0)
