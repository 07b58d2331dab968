#!/usr/bin/env bash
# Sets up, idempotently, the venv that runs the TRL side of bench_grpo_step.py (trl.GRPOTrainer) and of
# benchmarks/dpo/bench_dpo.py (trl.DPOTrainer)
# (trl 1.16.0, which supports the transformers 5.x of verl-cpp's venv).
#
# TRL is a benchmark-only dependency, so it stays out of verl-cpp's venv. Torch and transformers are
# not installed a second time: a .pth file runs site.addsitedir() on verl-cpp's venv's
# site-packages *after* the TRL venv's own (addsitedir also follows that directory's own .pth
# files, so a venv that itself borrows another venv's packages works too). TRL and the packages
# it adds (trl-requirements.txt, pinned) are installed with --no-deps, so pip never upgrades or
# replaces torch/transformers.
#
# Usage: VENV=<verl-cpp venv> TRL_VENV=<trl venv> bash setup_trl_venv.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../overlay_venv.sh
source "$here/../overlay_venv.sh"
VENV="${VENV:-$HOME/.cache/verl-cpp/venv}"
TRL_VENV="${TRL_VENV:-$HOME/.cache/verl-cpp/trl-venv}"
requirements="$here/trl-requirements.txt"
stamp="$TRL_VENV/.verl-cpp-trl-setup"

[ -x "$VENV/bin/python" ] || { echo "setup_trl_venv: no verl-cpp venv at $VENV (run 'make build' first)" >&2; exit 1; }
shared_site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
# The stamp records what the venv was built from; any change rebuilds it.
want_stamp="$(cat "$requirements" "${BASH_SOURCE[0]}" "$here/../overlay_venv.sh" | sha256sum | cut -d' ' -f1) $shared_site"

check_trl() {
  "$TRL_VENV/bin/python" - "$VENV/bin/python" <<'EOF2'
import subprocess, sys
main_python = sys.argv[1]
import torch, transformers, trl
from trl import GRPOConfig, GRPOTrainer  # noqa: F401
from trl import DPOConfig, DPOTrainer  # noqa: F401  (benchmarks/dpo)
assert trl.__version__ == "1.16.0", f"TRL venv has trl {trl.__version__}, want 1.16.0"
main = subprocess.run([main_python, "-c", "import torch, transformers; print(torch.__file__, transformers.__file__)"],
                      check=True, capture_output=True, text=True).stdout.split()
assert [torch.__file__, transformers.__file__] == main, \
    f"TRL venv imports a torch/transformers of its own ({torch.__file__}, {transformers.__file__}), not {main}"
EOF2
}

if [ -x "$TRL_VENV/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want_stamp" ]; then
  exit 0
fi

echo "setup_trl_venv: building $TRL_VENV (trl 1.16.0, --no-deps + trl-requirements.txt)"
build_overlay_venv setup_trl_venv "$VENV" "$TRL_VENV" "$requirements" "import site; site.addsitedir('$shared_site')"
check_trl
echo "$want_stamp" > "$stamp"
echo "setup_trl_venv: ready ($("$TRL_VENV/bin/python" -c 'import trl, transformers, torch; print("trl", trl.__version__, "+ transformers", transformers.__version__, "+ torch", torch.__version__)'))"
