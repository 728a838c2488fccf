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

"""``ros2 simclock``: the simclock commands as a ros2cli verb (loaded only by ros2cli)."""

from ros2cli.command import CommandExtension
from sim_clock.client.cli import run
from sim_clock.client.cli_arguments import add_arguments
from sim_clock.process.process_exit import exit_without_teardown


class SimclockCommand(CommandExtension):
    """Drive the sim_clock clock server."""

    def add_arguments(self, parser, cli_name):
        """Add the simclock commands."""
        add_arguments(parser)

    def main(self, *, parser, args):
        """
        Carry out one command, then end the process with its exit code.

        As the simclock executable does: without the libraries' teardown at exit, which can
        crash once the answer is printed (sim_clock.process.process_exit). ros2cli has nothing left
        to do after its verb but exit with the code returned.
        """
        exit_without_teardown(run(args))
