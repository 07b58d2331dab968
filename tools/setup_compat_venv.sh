#!/usr/bin/env bash
# Creates (idempotently) the second venv that `make test-compat` builds and tests against: another
# PyTorch release from PyPI ($COMPAT_TORCH) plus the same pinned packages as the main venv, read from
# pyproject.toml with only the torch pin replaced. It lives outside the work tree (~5 GB, like the main one).
set -euo pipefail

COMPAT_VENV=${COMPAT_VENV:-$HOME/.cache/verl-cpp/compat-venv}
COMPAT_TORCH=${COMPAT_TORCH:?set COMPAT_TORCH to a torch release, e.g. 2.13.0}
PYTHON=${PYTHON:-python3}

if [ ! -x "$COMPAT_VENV/bin/python" ]; then
  echo "setup-compat: creating the venv at $COMPAT_VENV"
  mkdir -p "$(dirname "$COMPAT_VENV")"
  "$PYTHON" -m venv "$COMPAT_VENV"
  "$COMPAT_VENV/bin/python" -m pip install -q --upgrade pip
fi

mapfile -t requirements < <("$COMPAT_VENV/bin/python" - "$COMPAT_TORCH" <<'PY'
import re, sys, tomllib
with open("pyproject.toml", "rb") as f:
    project = tomllib.load(f)
deps = project["project"]["dependencies"] + project["dependency-groups"]["dev"]
# Every pin but torch's, which this venv exists to vary.
print("\n".join([f"torch=={sys.argv[1]}"] + [d for d in deps if re.split(r"[=<>!~ \[;]", d, 1)[0] != "torch"]))
PY
)
echo "setup-compat: checking Python packages in $COMPAT_VENV (${requirements[*]})"
"$COMPAT_VENV/bin/python" -m pip install -q --disable-pip-version-check "${requirements[@]}"
