#!/usr/bin/env bash
# Installs what the build needs, idempotently: missing Debian packages, then the venv (outside
# the work tree, so clean clones reuse it) with torch and the pinned Python packages that
# pyproject.toml lists. Run by `make setup`, which every other make target depends on.
set -euo pipefail

VENV=${VENV:-$HOME/.cache/verl-cpp/venv}
PYTHON=${PYTHON:-python3}
# clang + libclang-rt-14-dev: the libFuzzer targets (make test-fuzz) and their sanitizer runtimes.
# catch2: the C++ tests. nlohmann_json, yaml-cpp and PCRE2 are vendored (third_party/README.md).
APT_PACKAGES=(build-essential cmake ninja-build ccache git catch2 clang libclang-rt-14-dev)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

missing=()
for p in "${APT_PACKAGES[@]}"; do installed "$p" || missing+=("$p"); done
# The interpreter must be able to create venvs and to build extensions (Python.h).
if ! "$PYTHON" -c 'import ensurepip, os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' 2>/dev/null; then
  for p in python3 python3-venv python3-dev; do installed "$p" || missing+=("$p"); done
  PYTHON=/usr/bin/python3
fi
if ((${#missing[@]})); then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
  echo "setup: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating the venv at $VENV"
  mkdir -p "$(dirname "$VENV")"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
fi

# Runtime dependencies (torch pinned there) plus the pinned development group, read from pyproject.toml.
mapfile -t requirements < <("$VENV/bin/python" - <<'PY'
import tomllib
with open("pyproject.toml", "rb") as f:
    project = tomllib.load(f)
print("\n".join(project["project"]["dependencies"] + project["dependency-groups"]["dev"]))
PY
)
echo "setup: checking Python packages (${requirements[*]})"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "${requirements[@]}"

# verl 0.9.1's own source, unpacked from its wheel (not installed: its dependencies are Ray, vLLM, ...): the parity
# tests (tests/python/trainer/*verl091_parity.py, test_trainer_otb.py) run its core_algos and rollout-correction
# functions against ours; without it they skip, and CI would never compare against verl.
VERL_091_DIR=${VERL_091_DIR:-$(dirname "$VENV")/verl091}
if [ ! -f "$VERL_091_DIR/verl/trainer/ppo/core_algos.py" ]; then
  echo "setup: fetching verl 0.9.1's source for the parity tests into $VERL_091_DIR"
  tmp=$(mktemp -d)
  "$VENV/bin/python" -m pip download -q --no-deps --disable-pip-version-check "verl==0.9.1" -d "$tmp"
  rm -rf "$VERL_091_DIR"
  mkdir -p "$VERL_091_DIR"
  "$VENV/bin/python" -m zipfile -e "$tmp"/verl-0.9.1-*.whl "$VERL_091_DIR"
  rm -rf "$tmp"
fi
