#!/usr/bin/env bash
# Set up what is missing, then run the clock server with the default configuration
# (config/sim_clock.yaml). --distro kilted runs it on ROS 2 Kilted (default: Jazzy). Other
# arguments go to the node as ROS arguments after that file, e.g. -p mode:=real_time;
# --help prints this script's usage and the node's (with its parameters).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/scripts/distro.sh"
server="$venv/lib/sim_clock/clock_server"
help=false
for arg in ${args[@]+"${args[@]}"}; do
  case "$arg" in -h|--help) help=true ;; esac
done
# --help needs no set-up once there is one to read the node's usage from.
if ! $help || [ ! -x "$server" ]; then
  "$root/scripts/setup.sh" --distro "$distro"
fi
export AMENT_PREFIX_PATH="$venv"
if $help; then
  echo "usage: scripts/run_server.sh [--distro jazzy|kilted] [-p NAME:=VALUE ...]"
  echo "Runs the clock server with config/sim_clock.yaml; the arguments after it are the"
  echo "node's ROS arguments (-p NAME:=VALUE overrides a parameter of that file). The clock"
  echo "server's own usage follows."
  echo
  exec "$server" --help
fi
exec "$server" --ros-args --params-file "$venv/share/sim_clock/config/sim_clock.yaml" \
  ${args[@]+"${args[@]}"}
