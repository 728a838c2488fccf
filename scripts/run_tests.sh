#!/usr/bin/env bash
# Set up what is missing (test requirements included), then run the whole test suite.
#   scripts/run_tests.sh                    ROS 2 Jazzy (.venv)
#   scripts/run_tests.sh --distro kilted    ROS 2 Kilted (.venv-kilted)
# Other arguments go to pytest, e.g. scripts/run_tests.sh -k timeline
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/scripts/distro.sh"
"$root/scripts/setup.sh" --distro "$distro" --test
export AMENT_PREFIX_PATH="$venv"
cd "$root"
# The venv's pytest imports the installed sim_clock (with its generated srv), never ./sim_clock.
exec "$venv/bin/pytest" ${args[@]+"${args[@]}"}
