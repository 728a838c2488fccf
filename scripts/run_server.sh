#!/usr/bin/env bash
# Set up what is missing, then run the clock server with the default configuration
# (config/sim_clock.yaml). Extra arguments go to the node, e.g. --ros-args -p mode:=real_time
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
export AMENT_PREFIX_PATH="$root/.venv"
exec "$root/.venv/lib/sim_clock/clock_server" \
  --ros-args --params-file "$root/.venv/share/sim_clock/config/sim_clock.yaml" "$@"
