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
from sim_clock.node.flow_control import Writers


def paced(flow: Writers, run: Run) -> Run:
    """
    Return ``run`` (a bag cursor's run, spending ``flow.budgets``) played to the end.

    Each time ``run`` stops on a spent budget, wait for the acknowledgements (with those of
    the node's other spent writers, the views'), refill, and call it again from where it
    stopped. Each time it raises ``PublishRefused``, call it again from the refused message if
    ``flow.retry`` says so (the policy for a refused sample of every sink: once that writer's
    readers have caught up, unless the same message was refused again at once); else that
    writer is left out (``DROPPED``) until ``flow.start()``.
    """
    budgets = flow.budgets

    def flowing(batch, index, frames, offset_ns, *clock_times):
        done, refused_at = 0, None
        while True:
            try:
                finished, index = run(batch, index, frames[done:], offset_ns, *clock_times)
            except PublishRefused as refusal:
                done += refusal.done
                index = refusal.index
                at = (refusal.which, done, index)
                if not flow.retry(refusal, refusal.which, at, refused_at):
                    budgets[refusal.which] = DROPPED
                    flow.gave_up(refusal.which, refusal, 'it publishes nothing more in these '
                                 'frames (this step, or this tick of free run)')
                refused_at = at
                continue
            done += finished
            if 0 not in budgets:
                return done, index
            flow.refill()
    return flowing
