#!/usr/bin/env bash
# The suite's statistical claims at the counts the docs quote, on demand (not part of the
# suite, which keeps the smallest run that shows each behaviour): the tests marked soak, run
# with pytest's --soak (test/harness.py, soak), e.g. 20 stacks started as launch starts them
# under each rule instead of 2.
#   scripts/soak.sh                     ROS 2 Jazzy
#   scripts/soak.sh --distro kilted     ROS 2 Kilted
# Other arguments go to pytest, e.g. scripts/soak.sh -k launch_style
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
exec "$root/scripts/run_tests.sh" -m soak --soak "$@"
