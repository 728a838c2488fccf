#!/usr/bin/env bash
# Set up what is missing (test requirements included), then run the whole test suite.
# Extra arguments go to pytest, e.g. scripts/run_tests.sh -k timeline
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh" --test
export AMENT_PREFIX_PATH="$root/.venv"
cd "$root"
# The venv's pytest imports the installed sim_clock (with its generated srv), never ./sim_clock.
exec "$root/.venv/bin/pytest" "$@"
