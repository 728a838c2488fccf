#!/usr/bin/env bash
# Set up what is missing, then run the clock server with the default configuration
# (config/sim_clock.yaml). --distro kilted runs it on ROS 2 Kilted (default: Jazzy). Other
# arguments go to the node, e.g. --ros-args -p mode:=real_time
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/scripts/distro.sh"
"$root/scripts/setup.sh" --distro "$distro"
export AMENT_PREFIX_PATH="$venv"
exec "$venv/lib/sim_clock/clock_server" \
  --ros-args --params-file "$venv/share/sim_clock/config/sim_clock.yaml" ${args[@]+"${args[@]}"}
