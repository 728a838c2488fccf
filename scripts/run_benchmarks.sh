#!/usr/bin/env bash
# Set up what is missing, then run the performance benchmark (benchmarks/performance/run.py):
# every figure of the clock server beside its bare rclpy baseline, as lines and JSON; then the
# stack of participants beside its bare barrier (benchmarks/stack.py).
# --distro kilted runs it on ROS 2 Kilted (default: Jazzy). Other arguments go to the
# benchmark, e.g. scripts/run_benchmarks.sh --smoke. A full run (no --smoke, no --only) puts
# its table, dated, with the machine and the commit, in doc/performance.md ("The latest full
# run"), in place of the last one's.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/scripts/distro.sh"
"$root/scripts/setup.sh" --distro "$distro"
export AMENT_PREFIX_PATH="$venv"
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
cd "$root"
doc=(--doc "$root/doc/performance.md")
case " ${args[*]-} " in *" --smoke "*|*" --only "*|*" --from-json "*) doc=() ;; esac
"$venv/bin/python" "$root/benchmarks/performance/run.py" ${doc[@]+"${doc[@]}"} \
  ${args[@]+"${args[@]}"}
# Then the stack of three participants beside the bare barrier of the same processes
# (doc/frames.md): frames/s in rounds and at the next frame, without the recorder. Not when
# the run was limited to some cases (--only).
case " ${args[*]-} " in *" --only "*) exit 0 ;; esac
runs=3
case " ${args[*]-} " in *" --smoke "*) runs=1 ;; esac
for mode in "--bare" "--no-record" "--no-record --mode next_frame"; do
  # shellcheck disable=SC2086
  "$venv/bin/python" "$root/benchmarks/stack.py" --runs "$runs" $mode
done
