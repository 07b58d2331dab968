#!/usr/bin/env bash
# Builds verl-cpp out of tree with another compiler or against another LibTorch and runs every C++ and Python test
# on that build (make test-clang, make test-compat). Usage:
#   tools/test_alt_build.sh PYTHON DIR [-C cmake.define.X=Y ...]
# PYTHON's venv provides torch (the build links its LibTorch) and pytest. The build is the one `make build` does
# (pip + scikit-build-core, tests on) but in DIR/cmake, and it is installed with --target into DIR/site rather than
# into the venv: the venv stays as it is, and --no-deps lets verl-cpp sit beside a torch other than its pin.
# The Python tests then import that install first (PYTHONPATH); a check makes sure they do.
set -euo pipefail

PY=$1 DIR=$2
shift 2
JOBS=${JOBS:-$(nproc)}
SITE=$(realpath -m "$DIR/site")

echo "test-alt-build: building into $DIR (python: $PY, torch $("$PY" -c 'import torch; print(torch.__version__)'))"
CMAKE_BUILD_PARALLEL_LEVEL=$JOBS "$PY" -m pip install --no-build-isolation --no-deps --disable-pip-version-check -q \
  --upgrade --target "$SITE" -C build-dir="$DIR/cmake" -C cmake.define.VERL_BUILD_TESTS=ON "$@" .

compiler=$(sed -n 's/^set(CMAKE_CXX_COMPILER_\(ID\|VERSION\) "\(.*\)")$/\2/p' "$DIR"/cmake/CMakeFiles/*/CMakeCXXCompiler.cmake)
echo "test-alt-build: built in ${SECONDS} s with" $compiler
start=$SECONDS
ctest --test-dir "$DIR/cmake" --output-on-failure -j "$JOBS"
echo "test-alt-build: ctest took $((SECONDS - start)) s"

# pytest must see this build, not the one installed in the venv: fail loudly if the path or the torch is wrong.
PYTHONPATH=$SITE "$PY" - "$SITE" <<'PY'
import sys, torch, verl, verl._build_info as info
assert verl.__file__.startswith(sys.argv[1] + "/"), f"verl imported from {verl.__file__}, not {sys.argv[1]}"
print(f"test-alt-build: pytest on {verl.__file__} (built against torch {info.torch_version}, running {torch.__version__})")
PY
start=$SECONDS
PYTHONPATH=$SITE "$PY" -m pytest tests/python -q
echo "test-alt-build: pytest took $((SECONDS - start)) s; all passed ($DIR, ${SECONDS} s in all)"
