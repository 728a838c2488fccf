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
The frame engine: every frame of every mode, from the timer or the service call to the answer.

:class:`FrameEngine` (``frame_engine``) makes and wires the three others: :class:`Frames`
(``frames``) publishes each frame and says what holds it; :class:`StepRunner` (``steps``)
carries a step from its request to its answer; :class:`FreeRun` (``free_run``) publishes the
frames of free run and real time at each tick. It is given its collaborators by their
interfaces (``sim_clock.node.engine.parts``) and imports no other module of the node.
"""

from sim_clock.node.engine.frame_engine import FrameEngine
from sim_clock.node.engine.steps import StepRequest
from sim_clock.node.engine.steps import StepRunner

__all__ = ['FrameEngine', 'StepRequest', 'StepRunner']
