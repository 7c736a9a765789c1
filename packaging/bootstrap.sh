#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Set up (or refresh) the project's virtual environment and run the console or the test suite.
#
#   packaging/bootstrap.sh run [qwconsole options]   open the console (embedded engine, demo)
#   packaging/bootstrap.sh test [pytest options]     lint, types, import contracts, all tests
#   packaging/bootstrap.sh bench [pytest options]    the benchmarks, judged, into docs/performance.md
#   packaging/bootstrap.sh env                       only set up the environment
#   packaging/bootstrap.sh bundle [--no-smoke]       build the desktop bundle into dist/qwconsole
#
# Works on a fresh Debian-like machine: installs the system libraries Qt needs with apt when
# run as root, otherwise prints the exact apt line and stops. Python >= 3.11 is required; set
# QW_PYTHON to choose the interpreter. The venv lives in .venv (QW_VENV to move it).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${QW_VENV:-$ROOT/.venv}
MODE=${1:-}
[ $# -gt 0 ] && shift

die() { echo "bootstrap: $*" >&2; exit 1; }

case "$MODE" in
  run|test|bench|env|bundle) ;;
  *) echo "usage: packaging/bootstrap.sh run|test|bench|env|bundle [args...]" >&2; exit 2 ;;
esac

# ------------------------------------------------------------------ system packages
# Offscreen Qt (tests, --smoke, --screenshot): platform-facts.md 2.1.
APT_BASE=(libglib2.0-0 libegl1 libgl1 libx11-6 libdbus-1-3 libfontconfig1 libfreetype6
          libxkbcommon0 libbrotli1 fonts-dejavu-core)
# A real window on X11 (the xcb platform plugin): platform-facts.md 2.2.
APT_WINDOW=(libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-render-util0
            libxcb-render0 libxcb-shape0 libxcb-util1 libxcb-xkb1 libxkbcommon-x11-0)

pick_python() {
  local candidates=("${QW_PYTHON:-}" python3.13 python3.12 python3.11 python3)
  for py in "${candidates[@]}"; do
    [ -n "$py" ] || continue
    command -v "$py" >/dev/null 2>&1 || continue
    if "$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      echo "$py"; return 0
    fi
  done
  return 1
}

PY=$(pick_python) || die "Python >= 3.11 not found (set QW_PYTHON, or: apt-get install -y python3 python3-venv)"

wanted=("${APT_BASE[@]}")
[ "$MODE" = run ] && wanted+=("${APT_WINDOW[@]}")
# The bundle copies the xcb plugin's libraries from the build machine (platform-facts.md 7.2);
# binutils strips debug sections from the bundle.
[ "$MODE" = bundle ] && wanted+=("${APT_WINDOW[@]}" binutils)
# python3-venv provides ensurepip for Debian's own python3.
if ! "$PY" -c 'import ensurepip, venv' >/dev/null 2>&1; then
  wanted+=(python3-venv)
fi
# The FIX hot path's native build (engine.native): a C compiler and the Python headers.
wanted+=(gcc libc6-dev)
if ! "$PY" -c 'import os, sysconfig, sys
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
    >/dev/null 2>&1; then
  wanted+=(python3-dev)  # Debian's own python3 (another interpreter brings its headers)
fi

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for pkg in "${wanted[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || missing+=("$pkg")
  done
else
  echo "bootstrap: no dpkg here; assuming the Qt system libraries are installed" >&2
fi

if [ ${#missing[@]} -gt 0 ]; then
  line="apt-get install -y --no-install-recommends ${missing[*]}"
  if [ "$(id -u)" = 0 ]; then
    echo "bootstrap: installing system packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "bootstrap: Qt needs system packages that are missing: ${missing[*]}" >&2
    echo "bootstrap: install them as root, then run this command again:" >&2
    echo "    sudo apt-get update && sudo $line" >&2
    exit 1
  fi
fi

# ------------------------------------------------------------------ virtual environment
# The stamp is "<hash of the pins and Python> <extras>". `run` needs no extra and uses a venv
# that has [dev] as it is; every other mode installs [dev] once. So switching between `run`
# and `test` never reinstalls; a changed pyproject/constraints file reinstalls what was there.
EXTRAS=""
[ "$MODE" != run ] && EXTRAS="[dev]"
STAMP="$VENV/.qw-stamp"
want_hash="$( (cat "$ROOT/pyproject.toml" "$ROOT/packaging/constraints.txt"; "$PY" -V) | sha256sum | cut -d' ' -f1)"
have_hash="" have_extras=""
[ -f "$STAMP" ] && read -r have_hash have_extras < "$STAMP" || true
[ "$have_extras" = "[dev]" ] && EXTRAS="[dev]"   # keep what is installed
if [ ! -x "$VENV/bin/python" ]; then
  echo "bootstrap: creating $VENV with $($PY -V)"
  "$PY" -m venv "$VENV"
fi
if [ "$have_hash" != "$want_hash" ] || [ "$have_extras" != "$EXTRAS" ]; then
  echo "bootstrap: installing pinned packages${EXTRAS:+ with $EXTRAS} into $VENV"
  pip_log="$VENV/pip-install.log"
  if ! "$VENV/bin/python" -m pip install -q -c "$ROOT/packaging/constraints.txt" \
      -e "$ROOT$EXTRAS" >"$pip_log" 2>&1; then
    tail -n 30 "$pip_log" >&2
    die "pip could not install the pinned packages (full log: $pip_log)"
  fi
  echo "$want_hash $EXTRAS" > "$STAMP"
fi

# ------------------------------------------------------------------ numba kernels
# Compile every kernel into numba's on-disk cache now, with a progress line, so the console's
# first start loads them in a second instead of compiling them (one to three minutes) while
# the user waits. numba keys its cache on each kernel file's path and content hash and the CPU,
# and rebuilds a stale, foreign or damaged entry (engine/jit.py); the stamp below only saves
# the second of checking it when no kernel file changed.
kernels_state() {  # what the cache's validity depends on, hashed
  (cd "$ROOT" && find engine analyzer -name '_kernels.py' -printf '%p %T@ %s\n' | sort
   echo "${NUMBA_CACHE_DIR:-}"; "$VENV/bin/python" -V
   find "${NUMBA_CACHE_DIR:-engine}" -name '*.nbi' 2>/dev/null | wc -l) | sha256sum
}
warm_kernels() {
  local stamp="$VENV/.qw-kernels-stamp"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(kernels_state)" ]; then
    return 0
  fi
  if "$VENV/bin/python" -m engine.warmup --prefix bootstrap; then
    kernels_state > "$stamp"  # after the warm-up, which has just written cache files
  else
    echo "bootstrap: the kernels will compile on the console's first start instead" >&2
  fi
}

# The FIX hot path compiled with mypyc (engine.native), rebuilt when a source changed; without
# it the engine runs interpreted, with the same results.
build_native() {
  "$VENV/bin/python" -m engine.native build --if-stale \
    || echo "bootstrap: the FIX engine runs interpreted (see above)" >&2
}

cd "$ROOT"
case "$MODE" in
  run|test|env|bench) build_native ;;
esac
case "$MODE" in
  run|test|env) warm_kernels ;;
esac
case "$MODE" in
  env)
    echo "bootstrap: $VENV is ready" ;;
  run)
    exec "$VENV/bin/qwconsole" "$@" ;;
  test)
    export QT_QPA_PLATFORM=offscreen
    t0=$(date +%s)
    failed=()
    step() { local name=$1; shift; echo "== $name"; "$@" || failed+=("$name"); }
    step "ruff check"     "$VENV/bin/ruff" check .
    step "ruff format"    "$VENV/bin/ruff" format --check .
    step "mypy"           "$VENV/bin/mypy"
    step "import-linter"  "$VENV/bin/lint-imports"
    step "commit subjects" "$VENV/bin/python" packaging/check_commits.py
    if [ $# -gt 0 ]; then
      step "pytest"         "$VENV/bin/python" -m pytest -m "not bench" "$@"
    else
      # Two runs: the GUI tests share one QApplication; everything else never makes one, so a
      # Qt object left behind by a GUI test cannot take the engine tests down with it. The
      # engine part runs on QW_TEST_WORKERS processes (pytest-xdist, 2 by default: most of its
      # time waits on sockets, child processes and timers), a file's tests on one of them.
      step "pytest (engine, integration)" "$VENV/bin/python" -m pytest -m "not bench and not gui" \
        -n "${QW_TEST_WORKERS:-2}" --dist loadfile
      step "pytest (GUI, offscreen)"      "$VENV/bin/python" -m pytest -m "gui and not bench"
      # The FIX unit tests once more on the interpreted modules (the tests marked
      # `interpreted`, which replace methods of compiled classes, run only here).
      step "pytest (FIX, interpreted)"    env QW_NATIVE=0 "$VENV/bin/python" -m pytest \
        -m "not bench and not gui" -n "${QW_TEST_WORKERS:-2}" --dist loadfile -q tests/unit/engine/fix
    fi
    if [ ${#failed[@]} -gt 0 ]; then
      echo "bootstrap: FAILED: ${failed[*]} ($(( $(date +%s) - t0 )) s)" >&2
      exit 1
    fi
    echo "bootstrap: all checks passed in $(( $(date +%s) - t0 )) s" ;;
  bench)
    export QT_QPA_PLATFORM=offscreen
    # The reference backtester, without its plotting dependencies (the benchmarks skip its
    # column with a note when it cannot be installed).
    "$VENV/bin/python" -c "import hftbacktest" 2>/dev/null \
      || "$VENV/bin/python" -m pip install -q --no-deps -c "$ROOT/packaging/constraints.txt" \
           hftbacktest >/dev/null 2>&1 \
      || echo "bootstrap: hftbacktest could not be installed; its figures will be skipped"
    # QuickFIX's Python binding for the FIX tables' QuickFIX column (it compiles for minutes;
    # the column is left out with a note when it cannot be installed).
    "$VENV/bin/python" -c "import quickfix" 2>/dev/null \
      || "$VENV/bin/python" -m pip install -q quickfix >/dev/null 2>&1 \
      || echo "bootstrap: quickfix could not be installed; the FIX tables leave it out"
    status=0
    if [ $# -gt 0 ]; then
      # pytest options: the benchmarks' pytest forms (reduced sizes, the same targets). The
      # files are bench_*.py, which the normal run never collects (pyproject's python_files).
      "$VENV/bin/python" -m pytest -m bench -s -o "python_files=bench_*.py" \
        tests/benchmarks "$@" || status=$?
      exit "$status"
    fi
    # Every benchmark at the issues' sizes, each run judged (exit 1 on a miss), each writing
    # its section of docs/performance.md; then the FIX tables (issue 18). About an hour here.
    for name in trading hotpath logging journal kernels fix ouch quit startup tickstore backtest \
                remote analyzer multicast sbe itch fast cluster relay; do
      echo "== bench_$name"
      "$VENV/bin/python" -m "tests.benchmarks.bench_$name" --doc || status=1
    done
    # The Monitor at issue 25's size: ten storms of 60 s, each judged (one baseline storm).
    echo "== bench_monitor"
    "$VENV/bin/python" -m tests.benchmarks.bench_monitor --seconds 60 --runs 10 \
      --baseline-runs 1 --doc || status=1
    echo "== bench_soak"
    "$VENV/bin/python" -m tests.benchmarks.bench_soak --plot docs/screenshots/soak-1m.png \
      --doc || status=1
    echo "== qwconsole bench fix"
    "$VENV/bin/python" -m app bench fix --png docs/screenshots/fix-round-trips.png \
      --doc docs/performance.md || status=$?
    echo "== the summary of every judged figure (docs/performance.md)"
    "$VENV/bin/python" -m tests.benchmarks.judge --doc docs/performance.md || status=1
    exit "$status" ;;
  bundle)
    exec "$VENV/bin/python" packaging/bundle.py "$@" ;;
esac
