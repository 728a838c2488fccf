#!/usr/bin/env bash
# Set up what is missing, idempotently: the virtual environment at .venv, the pinned wheels,
# and the package build (interfaces + Python modules) installed into .venv.
#   scripts/setup.sh          run-time set-up
#   scripts/setup.sh --test   also the test requirements
#   --distro kilted           ROS 2 Kilted in .venv-kilted instead of Jazzy in .venv
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/scripts/distro.sh"
set -- ${args[@]+"${args[@]}"}

python=${PYTHON:-}
if [ -z "$python" ]; then
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null && "$candidate" -c \
        'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
      python=$candidate
      break
    fi
  done
fi
if [ -z "$python" ]; then
  echo "setup: Python 3.11 is required (the ROS 2 $distro wheels are built for it)." >&2
  exit 1
fi

if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating $venv"
  "$python" -m venv "$venv"
fi

# Wheels: installed again only when a requirements file changed.
files=("$requirements/run.txt")
if [ "${1:-}" = "--test" ]; then
  files+=("$requirements/test.txt")
fi
for file in "${files[@]}"; do
  stamp="$venv/.installed-$(basename "$file").sha256"
  digest=$(sha256sum "$file" | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$digest" ]; then
    echo "setup: installing $(basename "$file")"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$file" \
      2> >(grep -v "^WARNING: Location" >&2)
    echo "$digest" > "$stamp"
  fi
done

# Tests: headless Chromium opens the timeline report (test/client/test_report_in_browser.py).
# Debian's package, once; where it cannot be installed the set-up goes on and that test
# skips, saying so.
if [ "${1:-}" = "--test" ] && ! command -v chromium >/dev/null; then
  mkdir -p "$build"
  log="$build/chromium-install.log"
  as_root=()
  if [ "$(id -u)" != 0 ]; then
    as_root=(sudo -n)
  fi
  echo "setup: installing chromium with apt-get (the report's browser test)"
  # With its recommended packages: the fonts the page's text is drawn with come among them.
  if ! { ${as_root[@]+"${as_root[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get update -qq \
         && ${as_root[@]+"${as_root[@]}"} env DEBIAN_FRONTEND=noninteractive \
              apt-get install -y -qq chromium; } > "$log" 2>&1; then
    echo "setup: could not install chromium (apt-get failed, see $log): the browser test" \
         "of the report will be skipped" >&2
  fi
fi

# The package: CMake generates the interfaces and installs everything into the venv prefix.
export PATH="$venv/bin:$PATH"
export AMENT_PREFIX_PATH="$venv"
mkdir -p "$build"
if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "setup: configuring the build"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
    -DCMAKE_PREFIX_PATH="$venv" -DCMAKE_INSTALL_PREFIX="$venv" \
    -DPython3_EXECUTABLE="$venv/bin/python3" > "$build/configure.log" 2>&1 \
    || { cat "$build/configure.log" >&2; rm -f "$build/CMakeCache.txt"; exit 1; }
fi
cmake --build "$build" -j 2 > "$build/build.log" 2>&1 || { cat "$build/build.log" >&2; exit 1; }
# A module moved or removed in the source must not linger in the install: the Python package
# is installed afresh each time (with the interfaces generated into it).
rm -rf "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/sim_clock"
cmake --install "$build" > "$build/install.log" 2>&1 || { cat "$build/install.log" >&2; exit 1; }
