#!/usr/bin/env bash
# The install test a user would run (issue 22), part of `make test` (target test-install):
#   1. check the repaired wheel's contents (tests/install/check_wheel.py);
#   2. install it into a fresh venv that shares nothing with the development venv but the download cache:
#      torch and the other dependencies are resolved from PyPI as `pip install verl-cpp` would;
#   3. there: import verl, train two GRPO steps through the Python API and through verl's CLI
#      (tests/install/smoke.py), and build + run examples/cpp_app with find_package(verl) against the
#      installed package.
# uv does the venv and the install: the same resolution from the same index as pip, but it links the
# unpacked torch (~5 GB with its CUDA libraries) from its cache in about a second, where pip unpacks it
# again on every run (2-3 minutes here). Usage: run_install_test.sh WHEEL_DIR DEV_PYTHON BASE_PYTHON
set -euo pipefail

WHEEL_DIR=$1      # where `make wheel` put the repaired wheel
DEV_PY=$2         # the development venv's python: runs uv and check_wheel.py (pyelftools), nothing else
BASE_PY=$3        # the interpreter the fresh venv is made from
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK="$ROOT/build/install-test"
UV="$(dirname "$DEV_PY")/uv"
start=$(date +%s)

version=$("$DEV_PY" -c 'import re; print(re.search(r"project\(verl VERSION ([0-9.]+)", open("'"$ROOT"'/CMakeLists.txt").read()).group(1))')
tag=$("$BASE_PY" -c 'import sys; print(f"cp{sys.version_info.major}{sys.version_info.minor}")')
wheels=("$WHEEL_DIR"/verl_cpp-"$version"-"$tag"-"$tag"-*manylinux*.whl)
if [ ! -f "${wheels[0]}" ]; then
  echo "install test: no repaired verl_cpp-$version-$tag wheel in $WHEEL_DIR (run make wheel)" >&2
  exit 1
fi
wheel=${wheels[0]}

# No absolute path of this machine may appear in the wheel: the source tree, the build tree, the dev venv.
"$DEV_PY" "$ROOT/tests/install/check_wheel.py" "$wheel" --forbid "$ROOT" --forbid "$(dirname "$(dirname "$DEV_PY")")"

rm -rf "$WORK"
mkdir -p "$WORK"
"$UV" venv -q --python "$BASE_PY" "$WORK/venv"
"$UV" pip install -q --python "$WORK/venv/bin/python" "$wheel"
echo "install test: installed $(basename "$wheel") and its dependencies into a fresh venv in $(( $(date +%s) - start )) s"

# From outside the source tree, so that nothing there can be imported by accident.
(cd "$WORK" && "$WORK/venv/bin/python" "$ROOT/tests/install/smoke.py" "$WORK/smoke")

prefix=$("$WORK/venv/bin/python" -c 'import torch, verl; print(verl.cmake_prefix_path + ";" + torch.utils.cmake_prefix_path)')
# LibTorch's CMake config warns about CUDA settings it does not use; the log keeps that out of the way.
run_logged() { "$@" >> "$WORK/cpp_app.log" 2>&1 || { cat "$WORK/cpp_app.log"; exit 1; }; }
run_logged cmake -S "$ROOT/examples/cpp_app" -B "$WORK/cpp_app" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix"
run_logged cmake --build "$WORK/cpp_app"
run_logged "$WORK/cpp_app/verl_cpp_app" --steps 2
echo "install test: examples/cpp_app built with find_package(verl) against the installed wheel, 2 GRPO steps ok"
echo "install test: passed in $(( $(date +%s) - start )) s"
