"""No silent config keys: every leaf of both config trees is honoured, refused or of no effect, exactly once; a
refused key set to another value is a ConfigError naming it; --explain and docs/config.md say the same."""

import os
import subprocess
import sys

import pytest

import verl
from verl import config_keys
from verl.config import Config, load_config, load_sft_config

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _tree(sft):
    return load_sft_config() if sft else Config()


@pytest.mark.parametrize("sft", [False, True], ids=["ppo", "sft"])
def test_every_leaf_is_classified_exactly_once(sft):
    tree_leaves = config_keys.leaves(_tree(sft))
    entries = config_keys.entries(sft)
    assert len(tree_leaves) > (40 if sft else 800)
    covered = {leaf: [e.key for e in entries if leaf == e.key or leaf.startswith(e.key + ".")] for leaf in tree_leaves}
    assert {leaf: keys for leaf, keys in covered.items() if len(keys) != 1} == {}
    assert all(e.cls in config_keys.CLASSES for e in entries)


@pytest.mark.parametrize("sft", [False, True], ids=["ppo", "sft"])
def test_every_entry_names_keys_of_the_tree(sft):
    """No stale entry: each names a leaf or a map of the tree (then it covers every leaf below), none twice, none
    inside another."""
    tree_leaves = config_keys.leaves(_tree(sft))
    keys = [e.key for e in config_keys.entries(sft)]
    assert len(keys) == len(set(keys))
    stale = [k for k in keys if not any(leaf == k or leaf.startswith(k + ".") for leaf in tree_leaves)]
    assert stale == []
    nested = [(a, b) for a in keys for b in keys if a != b and b.startswith(a + ".")]
    assert nested == []


@pytest.mark.parametrize("sft", [False, True], ids=["ppo", "sft"])
def test_refused_and_no_effect_entries_say_why(sft):
    entries = config_keys.entries(sft)
    assert [e.key for e in entries if e.cls != config_keys.HONOURED and len(e.reason) < 20] == []
    assert [e.key for e in entries if e.same_as and e.cls != config_keys.REFUSED] == []
    tree = _tree(sft)
    assert [e.same_as for e in entries if e.same_as and e.same_as not in tree] == []


def test_counts_and_the_keys_the_issue_names():
    """The keys verl users set most often land where they should."""
    find = config_keys.find
    for key in ["actor_rollout_ref.model.lora.rank", "actor_rollout_ref.rollout.multi_turn.num_repeat_rollouts",
                "actor_rollout_ref.actor.fsdp_config.offload_policy",
                "actor_rollout_ref.actor.ulysses_sequence_parallel_size", "critic.model.path"]:
        assert find(key).cls == config_keys.REFUSED, key
    for key in ["actor_rollout_ref.actor.use_torch_compile", "actor_rollout_ref.model.use_liger",
                "actor_rollout_ref.rollout.gpu_memory_utilization", "ray_kwargs.ray_init.num_cpus"]:
        assert find(key).cls == config_keys.NO_EFFECT, key
    for key in ["actor_rollout_ref.model.lora_rank", "actor_rollout_ref.model.lora_alpha",
                "actor_rollout_ref.model.target_modules", "actor_rollout_ref.model.exclude_modules",
                "actor_rollout_ref.model.lora_adapter_path", "critic.model.lora_rank",
                "critic.model.target_modules"]:  # LoRA (issue 42)
        assert find(key).cls == config_keys.HONOURED, key
    # rollout.name: native, vllm and sglang select verl-cpp's engine (issue 16 item 5); hf is not a choice
    for key in ["algorithm.adv_estimator", "actor_rollout_ref.rollout.n", "data.train_batch_size",
                "actor_rollout_ref.actor.optim.lr", "trainer.default_local_dir", "actor_rollout_ref.rollout.name",
                # data-parallel ranks under torchrun (issue 18)
                "trainer.n_gpus_per_node", "trainer.nnodes", "actor_rollout_ref.nccl_timeout",
                "actor_rollout_ref.rollout.tensor_model_parallel_size",
                # the PPO trainer generates through agent loops (issue 19)
                "actor_rollout_ref.rollout.multi_turn.enable", "actor_rollout_ref.rollout.agent.default_agent_loop",
                "data.tool_config_path"]:
        assert find(key).cls == config_keys.HONOURED, key


# -- refused keys: a value other than the default is a ConfigError naming the key ---------------------------------

_SPECIAL = {
    # string keys with a choice rule: another allowed choice
    "actor_rollout_ref.rollout.dtype": "float16",
    # null defaults with a type rule
    "trainer.max_critic_ckpt_to_keep": 3,
}


def _other_value(key, default):
    """A value of the default's type that differs from it (and from the fp32 model dtype, for dtype keys)."""
    if key in _SPECIAL:
        return _SPECIAL[key]
    if key.endswith("dtype"):
        return "float16"
    if isinstance(default, bool):
        return not default
    if isinstance(default, int):
        return default + 1
    if isinstance(default, float):
        return default * 2 + 1.0
    if isinstance(default, str):
        return default + "_other"
    if isinstance(default, list):
        return ["other"] if not default else []
    if isinstance(default, dict):
        return {"other": 1}
    return "other"  # null: any value


def _refused_leaves(sft):
    tree = _tree(sft)
    out = []
    for leaf in config_keys.leaves(tree):
        if config_keys.find(leaf, sft).cls == config_keys.REFUSED:
            out.append(pytest.param(sft, leaf, id=("sft:" if sft else "") + leaf))
    return out


@pytest.mark.parametrize("sft,key", _refused_leaves(False) + _refused_leaves(True))
def test_refused_key_with_another_value_is_a_config_error_naming_it(sft, key):
    cfg = _tree(sft)
    value = _other_value(key, cfg.cpp.get(key))
    cfg.cpp.set(key, value)
    with pytest.raises(verl.ConfigError, match=f"'{key}'.*is not supported by verl-cpp yet") as info:
        cfg.validate()
    assert not isinstance(info.value, verl.ConfigTypeError)  # the refusal, not a type error


def test_every_refused_key_is_named_in_one_error():
    with pytest.raises(verl.ConfigError) as info:
        load_config(overrides=["actor_rollout_ref.model.lora.rank=8",
                               "actor_rollout_ref.ref.fsdp_config.offload_policy=true"])
    message = str(info.value)
    assert "2 settings are refused" in message
    assert "'actor_rollout_ref.model.lora.rank' = 8" in message
    assert "'actor_rollout_ref.ref.fsdp_config.offload_policy' = true" in message


def test_refused_key_at_its_default_value_or_interpolation_is_fine():
    load_config(overrides=["actor_rollout_ref.model.lora.rank=0", "actor_rollout_ref.rollout.name=native",
                           "actor_rollout_ref.rollout.tensor_model_parallel_size=1", "trainer.n_gpus_per_node=1",
                           # set to what its interpolation gives: not a change
                           "actor_rollout_ref.ref.ulysses_sequence_parallel_size=1"])
    # An interpolated refused key follows the key it names: the refusal is about that key, not this one.
    load_config(overrides=["trainer.project_name=other"])  # rollout.trace.project_name follows it


def test_refused_key_with_same_as_accepts_that_keys_value():
    cfg = load_config(overrides=["actor_rollout_ref.model.path=/models/a", "critic.model.path=/models/a",
                                 "trainer.max_actor_ckpt_to_keep=2", "trainer.max_critic_ckpt_to_keep=2",
                                 "actor_rollout_ref.actor.fsdp_config.dtype=fp16",
                                 "actor_rollout_ref.rollout.dtype=float16"])  # == the actor's compute dtype
    assert cfg["critic.model.path"] == "/models/a"
    with pytest.raises(verl.ConfigError, match="critic.model.path"):
        load_config(overrides=["actor_rollout_ref.model.path=/models/a", "critic.model.path=/models/b"])


def test_refusal_is_raised_by_every_way_of_loading():
    with pytest.raises(verl.ConfigError, match="actor_rollout_ref.model.lora.rank"):
        verl.RLConfig(algorithm="grpo", overrides=["actor_rollout_ref.model.lora.rank=8"])
    with pytest.raises(verl.ConfigError, match="actor_rollout_ref.model.lora.rank"):
        verl.RLConfig({"actor_rollout_ref": {"model": {"lora": {"rank": 8}}}})


def test_no_effect_keys_are_accepted():
    load_config(overrides=["actor_rollout_ref.actor.use_torch_compile=false", "actor_rollout_ref.model.use_liger=true",
                           "actor_rollout_ref.rollout.gpu_memory_utilization=0.9", "ray_kwargs.ray_init.num_cpus=4",
                           "+actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space=4"])


# -- --explain and docs/config.md ---------------------------------------------------------------------------------

def _run(module, *args):
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(verl.__file__)))}
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, env=env)


def test_explain_prints_class_reason_value_and_default():
    result = _run("verl.trainer.main_ppo", "--print-config", "--explain", "actor_rollout_ref.model.use_liger",
                  "--explain=actor_rollout_ref.model.lora.rank", "actor_rollout_ref.model.use_liger=true")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "actor_rollout_ref.model.use_liger = true (default false)" in out
    assert "no effect" in out and "Liger" in out
    assert "actor_rollout_ref.model.lora.rank = 0 (default 0)" in out
    assert "refused" in out and "LoRA" in out
    assert "algorithm:" not in out  # the explanation, not the whole config


def test_explain_a_map_lists_every_key_below_it():
    text = config_keys.explain("actor_rollout_ref.rollout.val_kwargs")
    assert text.count("honoured") == 5
    text = config_keys.explain("actor_rollout_ref.rollout.agent.custom_async_server.path")
    assert "refused" in text and "entry: actor_rollout_ref.rollout.agent.custom_async_server" in text


def test_explain_unknown_key_names_the_closest():
    result = _run("verl.trainer.main_ppo", "--explain", "actor_rollout_ref.model.lora_rnak")
    assert result.returncode == 2
    assert "actor_rollout_ref.model.lora_rank" in result.stderr


def test_sft_explain_uses_the_sft_tree():
    result = _run("verl.trainer.sft_trainer", "--explain", "trainer.seed", "--explain", "data.max_length")
    assert result.returncode == 0, result.stderr
    assert "trainer.seed = 1 (default 1)" in result.stdout and "no effect" in result.stdout
    assert "data.max_length = 1024 (default 1024)" in result.stdout


def test_refused_override_on_the_command_line_exits_2_naming_the_key():
    key = "actor_rollout_ref.rollout.multi_turn.use_inference_chat_template"
    result = _run("verl.trainer.main_ppo", "--print-config", f"{key}=true")
    assert result.returncode == 2
    assert key in result.stderr and "not supported" in result.stderr


def test_docs_config_md_is_generated_from_the_table():
    with open(os.path.join(REPO, "docs", "config.md"), encoding="utf-8") as f:
        assert f.read() == config_keys.markdown(), "regenerate: python -m verl.config_keys > docs/config.md"
