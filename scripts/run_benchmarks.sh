#!/usr/bin/env bash
# Set up what is missing, then run the performance benchmark (benchmarks/performance/run.py):
# every figure of the clock server beside its bare rclpy baseline, as lines and JSON.
# --distro kilted runs it on ROS 2 Kilted (default: Jazzy). Other arguments go to the
# benchmark, e.g. scripts/run_benchmarks.sh --smoke
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/scripts/distro.sh"
"$root/scripts/setup.sh" --distro "$distro"
export AMENT_PREFIX_PATH="$venv"
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
cd "$root"
exec "$venv/bin/python" "$root/benchmarks/performance/run.py" ${args[@]+"${args[@]}"}
