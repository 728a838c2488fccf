#!/usr/bin/env bash
# Set up what is missing (test requirements included), then run the whole test suite.
#   scripts/run_tests.sh                    ROS 2 Jazzy (.venv)
#   scripts/run_tests.sh --distro kilted    ROS 2 Kilted (.venv-kilted)
#   scripts/run_tests.sh --fast             the fast tier only: no process, no DDS participant
#   scripts/run_tests.sh --tier dds         one tier: fast, dds or process, as each test module
#                                           declares it (pytestmark; test/conftest.py)
# Other arguments go to pytest, e.g. scripts/run_tests.sh -k timeline
# The tests run in SIM_CLOCK_TEST_WORKERS processes (default 2; 0: in pytest's own), a test
# file's tests in one of them; the fast tier and a run given -n run as asked.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/scripts/distro.sh"
"$root/scripts/setup.sh" --distro "$distro" --test
export AMENT_PREFIX_PATH="$venv"
cd "$root"
# The venv's pytest imports the installed sim_clock (with its generated srv), never ./sim_clock.
pytest_args=()
workers=${SIM_CLOCK_TEST_WORKERS:-2}
for arg in ${args[@]+"${args[@]}"}; do
  case "$arg" in
    --fast) pytest_args+=(--tier fast); workers=0 ;;
    -n|-n[0-9]*|--numprocesses|--numprocesses=*) pytest_args+=("$arg"); workers=0 ;;
    *) pytest_args+=("$arg") ;;
  esac
done
if [ "$workers" != 0 ]; then
  pytest_args=(-n "$workers" --dist loadfile ${pytest_args[@]+"${pytest_args[@]}"})
fi
exec "$venv/bin/pytest" ${pytest_args[@]+"${pytest_args[@]}"}
