#!/usr/bin/env bash
# Runs verl's own CPU unit tests for the Python surface verl-cpp re-implements (DataProto, core_algos, metric
# utilities, the reward-manager registry, collate_fn, the algorithm config) against the installed verl-cpp package
# (issue 16 item 6). verl's tests are not vendored: they are copied from a verl checkout into a temporary folder
# and run there, so `import verl` can only find verl-cpp. Usage:
#   tools/run_verl_unit_tests.sh VERL_REPO [pytest args...]
# VERL_REPO is a verl work tree or git directory (a bare mirror works: the files are read with git archive).
# PYTHON (default: the development venv's python) runs pytest.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 VERL_REPO [pytest args...]" >&2
  exit 2
fi
REPO=$1
shift
PY=${PYTHON:-$HOME/.cache/verl-cpp/venv/bin/python}

# In the order pytest collects them from verl's tests/ folder, which is how verl's CI runs them in one process:
# test_core_algos_on_cpu.py's registry tests leave ADV_ESTIMATOR_REGISTRY empty behind them (verl's own tearDown
# clears it), so a file that looks an estimator up must run before it, as it does in verl's order.
TESTS=(
  tests/test_protocol_on_cpu.py
  tests/trainer/config/test_algo_config_on_cpu.py
  tests/trainer/ppo/test_core_algos_on_cpu.py
  tests/trainer/ppo/test_metric_utils_on_cpu.py
  tests/utils/dataset/test_rl_collate_fn_on_cpu.py
  tests/workers/reward_manager/test_registry_on_cpu.py
)

WORK=$(mktemp -d -t verl-unit-tests.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

if git --git-dir="$REPO" rev-parse --verify -q HEAD >/dev/null 2>&1; then
  GIT=(git --git-dir="$REPO")
elif git -C "$REPO" rev-parse --verify -q HEAD >/dev/null 2>&1; then
  GIT=(git -C "$REPO")
else
  echo "run_verl_unit_tests: $REPO is not a git repository of verl" >&2
  exit 2
fi
echo "run_verl_unit_tests: verl's tests at $("${GIT[@]}" log -1 --format='%h %cs %s' HEAD)"
# verl runs its tests from its repository root, and test_algo_config_on_cpu.py composes verl/trainer/config with
# Hydra from there: that folder of YAML comes along (a folder without __init__.py: `import verl` still finds only the
# installed verl-cpp, which the check below makes sure of).
"${GIT[@]}" archive HEAD "${TESTS[@]}" verl/trainer/config | tar -x -C "$WORK"
find "$WORK/verl" -name '*.py' -delete

# An empty ini makes the temporary folder pytest's rootdir: none of verl-cpp's pytest settings apply to these tests
# (verl runs them with pytest's defaults), and nothing on sys.path is a verl source tree.
printf '[pytest]\n' > "$WORK/pytest.ini"
cd "$WORK"
"$PY" - <<'PY'
import verl
assert hasattr(verl, "_C"), f"verl imported from {verl.__file__} is not verl-cpp"
print(f"run_verl_unit_tests: verl-cpp from {verl.__file__}")
PY
exec "$PY" -m pytest -p no:cacheprovider -q "$@" "${TESTS[@]}"
