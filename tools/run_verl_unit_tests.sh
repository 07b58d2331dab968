#!/usr/bin/env bash
# Runs verl's own CPU unit tests for the Python surface verl-cpp re-implements (DataProto and its TensorDict form,
# core_algos, rollout correction, metric utilities, the reward-manager registry, collate_fn, the algorithm and worker
# configs, torch_functional, the Sandbox Fusion client) against the installed verl-cpp package (issue 16 item 6,
# issue 40 item 4). verl's tests are not vendored: they are copied from verl sources into a temporary folder and run
# there, so `import verl` can only find verl-cpp. Usage:
#   tools/run_verl_unit_tests.sh VERL_SOURCE [VERL_SOURCE...] [pytest args...]
# A VERL_SOURCE is a verl work tree or git directory (a bare mirror works: files are read with git archive) or a plain
# folder holding verl/ and tests/, such as verl 0.9.1's wheel unpacked (~/.cache/verl-cpp/verl091, which ships some
# of verl's tests and the YAML tree). Each test file, and verl/trainer/config, comes from the first source that has
# it; a test file no source has is named and left out. To test against verl 0.9.1, the release verl-cpp matches, put
# its wheel first and a git checkout after it for the tests the wheel does not ship:
#   tools/run_verl_unit_tests.sh ~/.cache/verl-cpp/verl091 /path/to/verl.git
# (A checkout older than 0.9.1 alone brings YAML with fields 0.9.1 dropped, such as actor.router_replay, and
# test_actor_config_on_cpu.py's three YAML tests then fail as they would against verl 0.9.1.)
# PYTHON (default: the development venv's python) runs pytest. `make test` runs it with the wheel alone
# (tests/python/test_verl_own_unit_tests.py: every file the wheel ships must pass, with no skip).
set -euo pipefail

if [ $# -lt 1 ] || [ ! -d "$1" ]; then
  echo "usage: $0 VERL_SOURCE [VERL_SOURCE...] [pytest args...]" >&2
  exit 2
fi
SOURCES=()
while [ $# -gt 0 ] && [ -d "$1" ]; do
  SOURCES+=("$1")
  shift
done
PY=${PYTHON:-$HOME/.cache/verl-cpp/venv/bin/python}

# In the order pytest collects them from verl's tests/ folder, which is how verl's CI runs them in one process:
# test_core_algos_on_cpu.py's registry tests leave ADV_ESTIMATOR_REGISTRY empty behind them (verl's own tearDown
# clears it), so a file that looks an estimator up must run before it, as it does in verl's order.
TESTS=(
  tests/test_base_config_on_cpu.py
  tests/test_protocol_on_cpu.py
  tests/trainer/config/test_algo_config_on_cpu.py
  tests/trainer/ppo/test_core_algos_on_cpu.py
  tests/trainer/ppo/test_dynamic_policy_losses_on_cpu.py
  tests/trainer/ppo/test_loss_aggregation_on_cpu.py
  tests/trainer/ppo/test_metric_utils_on_cpu.py
  tests/trainer/ppo/test_reinforce_pp_multiturn_on_cpu.py
  tests/utils/dataset/test_rl_collate_fn_on_cpu.py
  tests/workers/reward_manager/test_registry_on_cpu.py
  tests/test_protocol_v2_on_cpu.py
  tests/trainer/ppo/test_rollout_corr_integration.py
  tests/utils/test_torch_functional.py
  tests/utils/reward_score/reward_score/test_sandbox_fusion_on_cpu.py
  tests/workers/config/test_actor_config_on_cpu.py
  tests/workers/config/test_critic_config_on_cpu.py
  tests/workers/config/test_engine_config_on_cpu.py
  tests/workers/config/test_optim_config_on_cpu.py
)

# Tests left out, each for a reason outside verl-cpp's code:
DESELECT=(
  # tensordict: verl pins tensordict <= 0.10, where torch.cat keeps the first of differing NonTensorData and
  # consolidate() refuses a non-contiguous tensor; verl-cpp's pinned 0.15.3 stacks the values and consolidates.
  # tu.concat_tensordict keeps the first value itself, so the helper verl code calls behaves as in verl.
  tests/test_protocol_v2_on_cpu.py::test_chunk_concat
  tests/test_protocol_v2_on_cpu.py::test_contiguous
  # McoreEngineConfig.grad_offload: a field of verl before 0.9.1, which dropped it (the git checkout's test is older).
  "tests/workers/config/test_engine_config_on_cpu.py::TestMcoreEngineConfig::test_offload_flags[grad_offload]"
)

WORK=$(mktemp -d -t verl-unit-tests.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# copy_from SOURCE PATH: PATH (a file or folder) from SOURCE into $WORK; fails when SOURCE lacks it.
copy_from() {
  local src=$1 path=$2
  if git --git-dir="$src" rev-parse --verify -q HEAD >/dev/null 2>&1; then
    git --git-dir="$src" cat-file -e "HEAD:$path" 2>/dev/null || return 1
    git --git-dir="$src" archive HEAD "$path" | tar -x -C "$WORK"
  elif git -C "$src" rev-parse --verify -q HEAD >/dev/null 2>&1; then
    git -C "$src" cat-file -e "HEAD:$path" 2>/dev/null || return 1
    git -C "$src" archive HEAD "$path" | tar -x -C "$WORK"
  else
    [ -e "$src/$path" ] || return 1
    mkdir -p "$WORK/$(dirname "$path")"
    cp -r "$src/$path" "$WORK/$path"
  fi
}

describe() {
  if git --git-dir="$1" rev-parse --verify -q HEAD >/dev/null 2>&1; then
    git --git-dir="$1" log -1 --format='%h %cs %s' HEAD
  elif git -C "$1" rev-parse --verify -q HEAD >/dev/null 2>&1; then
    git -C "$1" log -1 --format='%h %cs %s' HEAD
  elif [ -f "$1/verl/version/version" ]; then
    echo "verl $(cat "$1/verl/version/version") (no git history)"
  else
    echo "a folder without git history"
  fi
}

# verl runs its tests from its repository root, and test_algo_config_on_cpu.py / test_actor_config_on_cpu.py compose
# verl/trainer/config with Hydra from there: that folder of YAML comes along (without its .py files: `import verl`
# still finds only the installed verl-cpp, which the check below makes sure of).
FOUND=()
for path in "${TESTS[@]}" verl/trainer/config; do
  from=""
  for src in "${SOURCES[@]}"; do
    if copy_from "$src" "$path"; then
      from=$src
      break
    fi
  done
  if [ -z "$from" ]; then
    echo "run_verl_unit_tests: $path is in none of the sources, left out"
  else
    echo "run_verl_unit_tests: $path from $from ($(describe "$from"))"
    [ "$path" = verl/trainer/config ] || FOUND+=("$path")
  fi
done
find "$WORK/verl" -name '*.py' -delete 2>/dev/null || true
[ ${#FOUND[@]} -gt 0 ] || { echo "run_verl_unit_tests: no test file found in ${SOURCES[*]}" >&2; exit 2; }
DESELECT_ARGS=()
for test in "${DESELECT[@]}"; do
  DESELECT_ARGS+=(--deselect "$test")
done

# An empty ini makes the temporary folder pytest's rootdir: none of verl-cpp's pytest settings apply to these tests
# (verl runs them with pytest's defaults), and nothing on sys.path is a verl source tree.
printf '[pytest]\n' > "$WORK/pytest.ini"
cd "$WORK"
"$PY" - <<'PY'
import verl
assert hasattr(verl, "_C"), f"verl imported from {verl.__file__} is not verl-cpp"
print(f"run_verl_unit_tests: verl-cpp from {verl.__file__}")
PY
exec "$PY" -m pytest -p no:cacheprovider -q "${DESELECT_ARGS[@]}" "$@" "${FOUND[@]}"
