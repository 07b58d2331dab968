#!/usr/bin/env bash
# Sets up, idempotently, the venv that runs the reference side of bench_core_algos.py: verl 0.9.1's
# own Python package (verl.trainer.ppo.core_algos, verl.utils.torch_functional) from PyPI.
#
# verl's package is named `verl`, like verl-cpp's, so it lives in its own venv ($REF_VENV). Torch is
# not installed a second time: a .pth file appends verl-cpp's site-packages to the reference venv's
# sys.path *after* its own site-packages, so there `import verl` is verl 0.9.1 and `import torch` is
# the torch of verl-cpp's venv. verl is installed with --no-deps plus the pinned packages of
# reference-requirements.txt, the smallest set its core_algos import needs.
#
# Usage: VENV=<verl-cpp venv> REF_VENV=<reference venv> bash setup_reference_venv.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../overlay_venv.sh
source "$here/../overlay_venv.sh"
VENV="${VENV:-$HOME/.cache/verl-cpp/venv}"
REF_VENV="${REF_VENV:-$HOME/.cache/verl-cpp/verl-ref-venv}"
requirements="$here/reference-requirements.txt"
stamp="$REF_VENV/.verl-ref-setup"

[ -x "$VENV/bin/python" ] || { echo "setup_reference_venv: no verl-cpp venv at $VENV (run 'make build' first)" >&2; exit 1; }
shared_site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
# The stamp records what the venv was built from; any change rebuilds it.
want_stamp="$(cat "$requirements" "${BASH_SOURCE[0]}" "$here/../overlay_venv.sh" | sha256sum | cut -d' ' -f1) $shared_site"

check_reference() {
  "$REF_VENV/bin/python" - "$shared_site" <<'EOF'
import sys
shared_site = sys.argv[1]
import torch
import verl
import verl.trainer.ppo.core_algos  # noqa: F401
import verl.utils.torch_functional  # noqa: F401
assert verl.__version__ == "0.9.1", f"reference venv has verl {verl.__version__}, want 0.9.1"
assert not verl.__file__.startswith(shared_site), f"reference venv imports verl-cpp's verl ({verl.__file__})"
assert torch.__file__.startswith(shared_site), f"reference venv imports a torch of its own ({torch.__file__})"
EOF
}

if [ -x "$REF_VENV/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want_stamp" ]; then
  exit 0
fi

echo "setup_reference_venv: building $REF_VENV (verl 0.9.1, --no-deps + reference-requirements.txt)"
build_overlay_venv setup_reference_venv "$VENV" "$REF_VENV" "$requirements" "$shared_site"
check_reference
echo "$want_stamp" > "$stamp"
echo "setup_reference_venv: ready ($("$REF_VENV/bin/python" -c 'import verl, torch; print("verl", verl.__version__, "+ torch", torch.__version__)'))"
