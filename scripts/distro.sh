# Sourced by the scripts: the ROS 2 distribution chosen by --distro (default jazzy), and where
# its set-up lives. Sets: distro, venv, build, requirements; leaves the other arguments in args.
#   jazzy   .venv          build/venv    requirements/run.txt, requirements/test.txt
#   kilted  .venv-kilted   build/kilted  requirements/kilted/run.txt, .../test.txt
distro=jazzy
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --distro) distro=${2:-}; shift 2 || { echo "--distro needs a value: jazzy or kilted" >&2; exit 2; } ;;
    --distro=*) distro=${1#--distro=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
case "$distro" in
  jazzy) venv="$root/.venv"; build="$root/build/venv"; requirements="$root/requirements" ;;
  kilted) venv="$root/.venv-kilted"; build="$root/build/kilted"; requirements="$root/requirements/kilted" ;;
  *) echo "unknown distribution '$distro': use --distro jazzy (the default) or --distro kilted" >&2
     exit 2 ;;
esac
export ROS_DISTRO=$distro
# The Python of a ROS wheels venv executes itself again once, with its own libraries on
# LD_LIBRARY_PATH, and says so in _ROS_WHEELS_BOOTSTRAP_COMPLETE, which its children inherit.
# A script started from such a process (scripts/flake_hunt.py run by Jazzy's Python asking for
# Kilted) would otherwise run the other distribution's Python with these libraries, which
# fails to load (libfastdds.so.3.2 not found) or, where sonames match, mixes the two: forget
# both, and each venv's Python sets its own.
if [ -n "${_ROS_WHEELS_BOOTSTRAP_COMPLETE:-}" ]; then
  unset _ROS_WHEELS_BOOTSTRAP_COMPLETE LD_LIBRARY_PATH
fi
