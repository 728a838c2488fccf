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
Imported by Python at the start of every test child (this folder is on its PYTHONPATH).

SIGUSR1 prints the child's threads' Python stacks on its stdout, which the test reads: a child
that does not end shows where it waits before it is killed (``harness.ChildProcess.finish``).
"""

import faulthandler
import signal
import sys

faulthandler.register(signal.SIGUSR1, file=sys.stdout, all_threads=True)
