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
