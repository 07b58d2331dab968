"""``verl.PPOTrainer``: PPO / GRPO / RLOO / REINFORCE++ / ReMax / DAPO training on the C++ trainer.

>>> from verl import PPOTrainer, RLConfig
>>> trainer = PPOTrainer(config=RLConfig(algorithm="grpo", model="path/to/hf_model", n=8, batch_size=32,
...                                      train_files="train.jsonl", val_files="test.jsonl"),
...                      reward_fn=lambda response, ground_truth: float(response.strip() == ground_truth))
>>> trainer.fit()

One step is ``verl._C.trainer.PPOTrainer.step`` (verl's ``RayPPOTrainer.fit`` order, C++ end to end, the GIL
released): generate with the rollout engine on the actor's own weights, reward (the Python reward manager is
called back), log-probs, reference, values, advantages, critic and actor updates. This class adds what verl's
driver adds around it: datasets and the resumable dataloader, reward managers and reward-function adaptation,
validation (``val-core/<data_source>/acc/mean@N``), tracking (console line + JSONL metrics file, TensorBoard /
W&B when configured), the end-of-run plot and checkpoints.

The tutorials' forms run too: ``PPOTrainer(actor=verl.models.get_actor_model(...), reward_fn=f,
rollout_batch_size=8, num_epochs=1)`` with ``result = trainer.step(rows)`` on dataset rows (a ``StepResult``:
formats as the policy loss, ``.metrics`` holds the rest), and ``PPOTrainer(config=RLConfig(...), env=env)`` with
``collect_rollouts()`` -> trajectories, ``compute_rewards(trajectories)`` -> one reward per trajectory,
``optimize(trajectories, rewards)`` -> metrics.
"""

from __future__ import annotations

import logging
import os
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from .. import _C
from ..config import Config, load_config
from ..errors import ConfigError, DataError
from ..models.gguf_checkpoint import resolve_gguf_paths
from ..protocol import DataProto
from ..workers.reward_manager import build_reward_manager
from . import distributed
from .agent_rollout import AgentRollout, agent_rollout_enabled, check_agent_rollout_config
from .batch_defaults import fill_batch_defaults
from .checkpointing import (CheckpointDirectory, read_json, restore_lora_adapter, save_lora_adapter, tokenizer_dir,
                            write_json)
from .peft_config import peft_lora_settings
from .ppo.metric_utils import validation_metric_dict
from .ppo.reward import compute_reward, get_custom_reward_fn_path, load_reward_manager, reward_max_concurrent
from .rl_config import RLConfig
from .step_result import StepResult

__all__ = ["PPOTrainer", "as_config"]

_DTYPES = {"fp32": torch.float32, "float32": torch.float32, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16,
           "fp16": torch.float16, "float16": torch.float16, "fp64": torch.float64, "float64": torch.float64}


# The keys that name a model or tokenizer directory; a GGUF file there is converted once and the key then names the
# converted directory (verl.models.gguf_checkpoint).
MODEL_PATH_KEYS = ("actor_rollout_ref.model.path", "actor_rollout_ref.model.tokenizer_path", "critic.model.path",
                   "critic.model.tokenizer_path", "reward_model.model.path", "reward_model.model.input_tokenizer",
                   "algorithm.safe_rlhf.cost_model_path")


def as_config(config: Any) -> Config:
    """A validated ``verl.Config`` from an ``RLConfig``, a ``verl.Config``, a dict (short names, dotted keys,
    sections) or a YAML path; verl's defaults for None."""
    if config is None:
        return load_config()
    if isinstance(config, RLConfig):
        return config.to_config()
    if isinstance(config, Config):
        return config.copy().validate()
    if isinstance(config, _C.Config):
        return Config(config).copy().validate()
    if isinstance(config, (str, os.PathLike, Mapping)):
        return RLConfig(config if not isinstance(config, Mapping) else dict(config)).to_config()
    raise ConfigError(f"config must be an RLConfig, verl.Config, dict or YAML path, got {type(config).__name__}")


def _device(config: Config) -> str:
    device = str(config.get("trainer.device") or "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        return "cpu"  # verl's default is cuda; on a CPU-only machine training runs on the CPU
    return device


def _model_dtype(config: Config) -> torch.dtype:
    name = str(config.get("actor_rollout_ref.actor.fsdp_config.model_dtype") or "fp32")
    if name not in _DTYPES:
        raise ConfigError(f"actor_rollout_ref.actor.fsdp_config.model_dtype: unknown dtype {name!r} "
                          f"(one of {sorted(_DTYPES)})")
    return _DTYPES[name]


def _load_model(path: str, dtype: torch.dtype, device: str, key: str = "actor_rollout_ref.model.path") -> Any:
    """The Hugging Face checkpoint directory ``path`` (config key ``key``, named in the error) as a verl model."""
    import verl.models as models

    path = os.path.expanduser(path)
    if not os.path.isdir(path):
        raise ConfigError(f"{key}: model directory not found: {path}")
    return models.load_model(path, dtype=dtype, device=device)


def _cpp_module(model: Any, what: str) -> Any:
    if model is None:
        return None
    module = getattr(model, "_module", model)
    if not isinstance(module, _C.model.CausalLM):
        raise TypeError(f"{what} must be a verl.models CausalLM / ValueModel, got {type(model).__name__}")
    return module


def _as_prompt_batch(batch: Any, tokenizer: Any, data_config: Any) -> DataProto:
    """A prompt batch from a DataProto, verl's collated dict, tokenized dataset items, or rows in verl's schema
    (rendered with the chat template and tokenized here, as ``RLHFDataset`` does)."""
    if isinstance(batch, DataProto):
        return batch
    if isinstance(batch, _C.DataProto):
        return DataProto.from_cpp(batch)
    if isinstance(batch, Mapping):
        return DataProto.from_single_dict(dict(batch))
    if isinstance(batch, Sequence) and batch and all(isinstance(row, Mapping) for row in batch):
        from ..utils.dataset import RLHFDataset, collate_fn

        rows = [dict(row) for row in batch]
        if not all("input_ids" in row for row in rows):  # raw rows: render and tokenize them
            dataset = RLHFDataset.from_rows(rows, tokenizer, data_config, source="step rows")
            rows = [dataset[i] for i in range(len(dataset))]
        return DataProto.from_single_dict(collate_fn(rows))
    raise DataError(f"a prompt batch must be a DataProto, a collated dict or a non-empty list of dataset rows, got "
                    f"{type(batch).__name__}")


def _scores_as_token_level(rewards: Any, batch: DataProto) -> torch.Tensor:
    """``rewards`` (bs,) placed on each trajectory's last response token, or (bs, response_length) as they are:
    the ``token_level_scores`` the optimizer reads."""
    responses = batch.batch["responses"]
    rewards = torch.as_tensor(rewards, dtype=torch.float32).to(responses.device)
    if rewards.shape == responses.shape:
        return rewards
    if rewards.shape != (responses.shape[0],):
        raise DataError(f"rewards must have shape ({responses.shape[0]},) (one per trajectory) or "
                        f"{tuple(responses.shape)} (per token), got {tuple(rewards.shape)}")
    lengths = batch.batch["response_mask"].sum(-1).long() if "response_mask" in batch.batch else \
        batch.batch["attention_mask"][:, -responses.shape[1]:].sum(-1).long()
    scores = torch.zeros(responses.shape, dtype=torch.float32, device=responses.device)
    scores[torch.arange(len(rewards), device=responses.device), (lengths - 1).clamp(min=0)] = rewards
    return scores


def _note_rollout_engine(cfg: Any) -> None:
    """verl's command lines name their rollout engine (``actor_rollout_ref.rollout.name=vllm`` / ``sglang``); verl-cpp
    generates with its own engine whatever the name, with the same sampling parameters, so the line runs unchanged
    and one note says so (the engine-only keys such as gpu_memory_utilization are of no effect, docs/config.md)."""
    name = cfg.get("actor_rollout_ref.rollout.name")
    if name in ("vllm", "sglang"):
        logging.getLogger("verl").warning(
            "verl: actor_rollout_ref.rollout.name=%s: verl-cpp's native engine generates in %s's place (same "
            "sampling parameters; %s's own tuning keys have no effect here)", name, name, name)


class PPOTrainer:
    """verl's PPO-family trainer. See the module docstring.

    Args:
        config: ``RLConfig``, ``verl.Config``, dict or YAML path (verl's keys; ``RLConfig`` short names).
        reward_fn: a Python reward function in any form ``verl.trainer.reward_fn`` accepts (``f(response)``,
            ``f(response, ground_truth)``, verl's ``compute_score(data_source, solution_str, ground_truth,
            extra_info)``, a batched ``f(responses, ...)``), or a reward manager. None: the configured manager
            (``custom_reward_function.path`` or verl's ``default_compute_score``).
        train_dataset / val_dataset: ``RLHFDataset`` objects, file paths, or None for ``data.train_files`` /
            ``data.val_files``.
        tokenizer: default: the tokenizer in ``actor_rollout_ref.model.tokenizer_path`` or the model directory.
        model / ref_model / critic_model: ``verl.models`` objects to use instead of loading
            ``actor_rollout_ref.model.path`` (the reference is a frozen copy of the actor and the critic the
            actor's backbone with a new value head when not given and needed).
        val_reward_fn: reward for validation (default: the same function, printing one sample per source).
        actor: the tutorials' name for ``model``; either may also be a transformers ``PreTrainedModel`` (copied
            through ``verl.models.HFActor``). Its checkpoint directory (``name_or_path``) is the model path and
            tokenizer directory when the config names none.
        env: a ``verl.envs.LanguageModelEnv``: its model, tokenizer, reward function and prompts (the training set)
            stand in for those not given otherwise.
        rollout_batch_size / num_epochs: ``data.train_batch_size`` / ``trainer.total_epochs``, over the config.
        cost_fn / cost_model: Safe-RLHF's cost (``algorithm.safe_rlhf.enable``; exactly one of them then): a function in
            any form ``reward_fn`` takes, or a sequence classifier (a ``verl.models`` ValueModel or its checkpoint
            directory) scored as the reward model worker scores. ``cost_critic_model``: the cost critic's value model
            (default: the actor's backbone with a new value head, as the critic).
        peft_config: a ``peft.LoraConfig`` (TRL's ``peft_config=``): LoRA on the actor, its fields on verl's
            ``actor_rollout_ref.model.lora_*`` keys over the config's (``verl.trainer.peft_config``).
        tools: tools the agent loops may call (``actor_rollout_ref.rollout.multi_turn.enable``): plain Python functions
            (their signature and docstring are the schema) or ``verl.tools.BaseTool`` objects, besides those of
            ``multi_turn.tool_config_path`` / ``function_tool_path``. With ``multi_turn.enable`` every generation
            runs each row in the agent loop its ``agent_name`` names (``verl.trainer.agent_rollout``); steps report
            verl's ``num_turns/*`` and ``tool_call_counts/*``.

    Batch sizes left unset are derived and oversized ones clipped (``verl.trainer.batch_defaults``;
    ``batch_notes`` lists what was changed).
    """

    def __init__(self, config: Any = None, reward_fn: Any = None, train_dataset: Any = None, val_dataset: Any = None,
                 tokenizer: Any = None, *, model: Any = None, ref_model: Any = None, critic_model: Any = None,
                 val_reward_fn: Any = None, actor: Any = None, env: Any = None, rollout_batch_size: int | None = None,
                 num_epochs: int | None = None, cost_fn: Any = None, cost_model: Any = None,
                 cost_critic_model: Any = None, tools: Any = None, peft_config: Any = None) -> None:
        self.config = as_config(config)
        cfg = self.config
        for key, value in (("data.train_batch_size", rollout_batch_size), ("trainer.total_epochs", num_epochs)):
            if value is not None:
                cfg[key] = value
        if peft_config is not None:  # over the config's LoRA keys, as TRL's trainers take it over their args
            for key, value in peft_lora_settings(peft_config).items():
                cfg[key] = value
        cfg.validate()
        resolve_gguf_paths(cfg, MODEL_PATH_KEYS)
        self.env = env
        model = self._given_model(model, actor, env)
        if env is not None:
            tokenizer = tokenizer if tokenizer is not None else env.tokenizer
            reward_fn = reward_fn if reward_fn is not None else env.reward_fn
        self.device = _device(cfg) if model is None else str(model.device)
        model_path = cfg.get("actor_rollout_ref.model.path")
        if model is None:
            if not model_path:
                raise ConfigError("actor_rollout_ref.model.path is not set and no model was given")
            model = _load_model(str(model_path), _model_dtype(cfg), self.device)
        self.model = model
        if tokenizer is None:
            tok_path = self._tokenizer_dir() or tokenizer_dir(getattr(model, "name_or_path", None))
            if tok_path is not None:
                from ..tokenizer import load_tokenizer

                tokenizer = load_tokenizer(tok_path)
        if tokenizer is None:
            raise ConfigError("no tokenizer: pass tokenizer=... or put tokenizer.json in actor_rollout_ref.model."
                              "tokenizer_path / the model directory")
        custom_template = cfg.get("actor_rollout_ref.model.custom_chat_template")
        if custom_template:  # verl sets it on the tokenizer it loads: every prompt is rendered with it
            tokenizer.chat_template = custom_template
        self.tokenizer = tokenizer

        reward_key = cfg.get("data.reward_fn_key") or "data_source"
        self.rm_worker = self._reward_model_worker(reward_fn)
        self.reward_fn = self._reward_manager(reward_fn, num_examine=0, reward_key=reward_key)
        self.val_reward_fn = self._reward_manager(val_reward_fn if val_reward_fn is not None else reward_fn,
                                                  num_examine=1, reward_key=reward_key)
        self.cost_fn, self.cost_worker = self._cost_source(cost_fn, cost_model, reward_key)

        if train_dataset is None and env is not None:
            from ..utils.dataset import RLHFDataset

            train_dataset = RLHFDataset.from_rows(env.rows, self.tokenizer, cfg.data, source="LanguageModelEnv.prompts")
        self.train_dataset = self._dataset(train_dataset, "train_files", "train_max_samples")
        self.val_dataset = self._dataset(val_dataset, "val_files", "val_max_samples")
        #: the batch sizes settled for the user (verl.trainer.batch_defaults), one note per change
        self.batch_notes = fill_batch_defaults(cfg, len(self.train_dataset) if self.train_dataset is not None else None)
        _note_rollout_engine(cfg)
        self.train_dataloader = None
        if self.train_dataset is not None:
            from ..utils.dataset import create_rl_dataloader

            self.train_dataloader = create_rl_dataloader(self.train_dataset, cfg.data, train=True)
        self.total_training_steps = self._total_training_steps()

        check_agent_rollout_config(cfg, tools)
        eos = getattr(tokenizer, "eos_token_id", None)
        pad = getattr(tokenizer, "pad_token_id", None)
        #: the job's communicator under torchrun (None in one process) and this rank's process groups of the config's
        #: layout (verl._C.dist.DeviceMesh: the trainer's ranks, a rollout pool's, TP, HSDP): see
        #: verl.trainer.distributed
        self.communicator, self.mesh = distributed.device_mesh(cfg, self.device)
        # The agent loops run where the rollout engine is: this process's, or a rollout pool rank's (on its rows).
        loops_here = agent_rollout_enabled(cfg) and (not distributed.rollout_pool_size(cfg) or self.mesh.pool_rank)
        self._trainer = _C.trainer.PPOTrainer(
            cfg.cpp, _cpp_module(model, "model"), self._reward_callback, ref=_cpp_module(ref_model, "ref_model"),
            critic=_cpp_module(critic_model, "critic_model"),
            pad_token_id=pad if pad is not None else eos,
            eos_token_ids=[eos] if eos is not None else [],
            total_training_steps=self.total_training_steps,
            init_seed=int(cfg.get("actor_rollout_ref.rollout.seed") or 0), mesh=self.mesh,
            cost_fn=self._cost_callback if self.cost_fn is not None or self.cost_worker is not None else None,
            cost_critic=_cpp_module(cost_critic_model, "cost_critic_model"),
            rollout_fn=self._agent_rollout_call if loops_here else None,
            reward_per_sample=self._reward_is_per_sample())
        if self._trainer.actor_model is None:
            # A tensor-parallel rollout pool's rank keeps only its shard (the engine's model): the whole one goes.
            self.model = model = None
        #: the agent loops that generate when actor_rollout_ref.rollout.multi_turn.enable (else None; and on the
        #: trainer's ranks of a job with a rollout pool, whose ranks run them)
        self.agent_rollout = AgentRollout(self._trainer.engine, tokenizer, cfg, self._trainer.pad_token_id,
                                          tools=tools) if loops_here else None
        self.global_steps = 0
        self.epoch = 0
        self.tracker = None
        self._batches = None  # collect_rollouts()'s iterator over the training set
        self._loader_state_ahead = None  # fit() with hybrid_engine=False: the loader before the batch drawn ahead

    # -- construction helpers -----------------------------------------------------------------------
    def _given_model(self, model: Any, actor: Any, env: Any) -> Any:
        """The policy given as ``model``, ``actor`` or ``env.model`` as a verl model (None: load the config's)."""
        from ..errors import InvalidArgumentError
        from ..models.actor import as_actor

        if model is not None and actor is not None:
            raise InvalidArgumentError("PPOTrainer: pass the policy as model= or actor=, not both")
        given = model if model is not None else actor if actor is not None else getattr(env, "model", None)
        if given is None:
            return None
        given = as_actor(given)
        path = getattr(given, "name_or_path", None)
        configured = self.config.get("actor_rollout_ref.model.path")
        if path and not (configured and os.path.isdir(os.path.expanduser(str(configured)))):
            self.config["actor_rollout_ref.model.path"] = path  # where checkpoints copy the tokenizer from
        return given
    def _reward_manager(self, reward_fn: Any, num_examine: int, reward_key: str) -> Any:
        from ..workers.reward_manager.abstract import AbstractRewardManager

        if isinstance(reward_fn, AbstractRewardManager):
            return reward_fn
        if reward_fn is None:
            return load_reward_manager(self.config, self.tokenizer, num_examine=num_examine)
        return build_reward_manager(reward_fn, self.tokenizer, num_examine=num_examine, reward_fn_key=reward_key,
                                    max_concurrent=reward_max_concurrent(self.config))

    def _reward_model_worker(self, reward_fn: Any) -> Any:
        """The RM worker when ``reward_model.enable`` (or ``reward.reward_model.enable``) and no custom reward
        function is given: as in verl 0.9.1's reward loop, a custom function (``custom_reward_function.path`` or a
        ``reward_fn`` argument) is the reward, else the RM's score is."""
        from ..workers.reward_model import RewardModelWorker, reward_model_settings

        settings = reward_model_settings(self.config)  # ConfigError for enable without a model path
        if not settings.enable or reward_fn is not None or get_custom_reward_fn_path(self.config):
            return None
        return RewardModelWorker(self.config, device=self.device, dtype=_model_dtype(self.config))

    def _cost_source(self, cost_fn: Any, cost_model: Any, reward_key: str) -> tuple[Any, Any]:
        """Safe-RLHF's cost: (a reward manager over ``cost_fn``, None) or (None, a reward-model worker over
        ``cost_model``); (None, None) without Safe-RLHF. ConfigError when ``algorithm.safe_rlhf.enable`` and the
        cost sources given disagree."""
        enabled = bool(self.config.get("algorithm.safe_rlhf.enable"))
        if cost_fn is None and cost_model is None:  # the command line's forms
            from .ppo.reward import get_custom_cost_fn

            cost_fn = get_custom_cost_fn(self.config)
            cost_model = self.config.get("algorithm.safe_rlhf.cost_model_path") or None
        given = [name for name, v in (("cost_fn", cost_fn), ("cost_model", cost_model)) if v is not None]
        if enabled and len(given) != 1:
            raise ConfigError("algorithm.safe_rlhf.enable=true needs exactly one cost source, cost_fn= (a function in "
                              "any reward_fn form) or cost_model= (a sequence classifier), or on the command line "
                              "algorithm.safe_rlhf.cost_function.path or algorithm.safe_rlhf.cost_model_path" +
                              ("; got both" if given else ""))
        if not enabled and given:
            raise ConfigError(f"{given[0]} was given but algorithm.safe_rlhf.enable is false; set it to true for "
                              "Safe-RLHF or leave the cost out")
        if cost_fn is not None:
            return self._reward_manager(cost_fn, num_examine=0, reward_key=reward_key), None
        if cost_model is None:
            return None, None
        from ..workers.reward_model import RewardModelWorker, reward_model_settings

        if isinstance(cost_model, (str, os.PathLike)):
            import verl.models as models

            path = os.path.expanduser(str(cost_model))
            if not os.path.isdir(path):
                raise ConfigError(f"cost_model: model directory not found: {path}")
            cost_model = models.load_model(path, dtype=_model_dtype(self.config), device=self.device, value_head=True)
        rm = reward_model_settings(self.config)  # the reward model's per-pass limits apply to the cost model too
        settings = {"reward_model.enable": False, "reward_model.micro_batch_size_per_gpu": rm.micro_batch_size_per_gpu,
                    "reward_model.use_dynamic_bsz": rm.use_dynamic_bsz,
                    "reward_model.forward_max_token_len_per_gpu": rm.forward_max_token_len_per_gpu}
        return None, RewardModelWorker(settings, model=cost_model)

    def _dataset(self, dataset: Any, files_key: str, max_key: str) -> Any:
        from ..utils.dataset import create_rl_dataset

        max_samples = int(self.config.get(f"data.{max_key}") or -1)
        if dataset is None:
            files = self.config.get(f"data.{files_key}")
            if not files:
                return None
            paths = [files] if isinstance(files, str) else list(files)
            paths = [os.path.expanduser(str(p)) for p in paths]
            if not all(os.path.exists(p) for p in paths):
                return None  # verl's placeholder default paths: fit() reports the missing data
            dataset = paths
        if isinstance(dataset, (str, os.PathLike)) or (isinstance(dataset, Sequence) and dataset
                                                       and isinstance(dataset[0], (str, os.PathLike))):
            # verl's create_rl_dataset: data.custom_cls when configured, else RLHFDataset
            return create_rl_dataset(dataset, self.config.data, self.tokenizer, is_train=files_key == "train_files",
                                     max_samples=max_samples)
        return dataset

    def _total_training_steps(self) -> int | None:
        configured = self.config.get("trainer.total_training_steps")
        if self.train_dataloader is None:
            return int(configured) if configured else None
        steps = len(self.train_dataloader) * int(self.config.get("trainer.total_epochs"))
        return int(configured) if configured else steps

    # -- the reward callback (called from C++ with the GIL re-acquired) ------------------------------------
    def _reward_is_per_sample(self) -> bool:
        """Whether the training reward scores each sample on its own -- verl's naive and DAPO managers, no reward
        model (one forward per batch) --, so that steps score each prompt's samples as they finish (verl's reward
        loop). A batched function (``BatchRewardManager``) or a manager of the user's gets the whole batch."""
        from ..workers.reward_manager import DAPORewardManager, NaiveRewardManager

        return self.rm_worker is None and type(self.reward_fn) in (NaiveRewardManager, DAPORewardManager)

    def _reward_callback(self, cpp_batch: Any) -> tuple[torch.Tensor, dict[str, list]]:
        batch = DataProto.from_cpp(cpp_batch)
        if self.rm_worker is not None and "rm_scores" not in batch.batch:
            # the managers return rm_scores as the reward when present (verl's _extract_reward_from_rm_scores)
            batch = batch.union(self.rm_worker.compute_rm_score(batch))
        manager = self.val_reward_fn if batch.meta_info.get("validate") else self.reward_fn
        reward_tensor, extra = compute_reward(batch, manager)
        return reward_tensor, {k: list(v) for k, v in extra.items()}

    def _agent_rollout_call(self, rows: Any, params: Any, seed: int) -> Any:
        return self.agent_rollout(rows, params, seed)

    def _cost_callback(self, cpp_batch: Any) -> tuple[torch.Tensor, dict[str, list]]:
        """Safe-RLHF's cost of every response (called from C++ like the reward callback)."""
        batch = DataProto.from_cpp(cpp_batch)
        if self.cost_worker is not None:
            return self.cost_worker.compute_rm_score(batch).batch["rm_scores"], {}
        cost_tensor, extra = compute_reward(batch, self.cost_fn)
        return cost_tensor, {k: list(v) for k, v in extra.items()}

    # -- one step and its stages ---------------------------------------------------------------------------
    def _prompt_batch(self, batch: Any) -> DataProto:
        return _as_prompt_batch(batch, self.tokenizer, self.config.data)

    @distributed.controller_call
    def step(self, batch: Any) -> StepResult:
        """One training step on a prompt batch: a DataProto, verl's collated dict, or a list of dataset rows (raw
        rows in verl's schema are rendered and tokenized). Returns the step's metrics as a ``StepResult`` (formats
        as ``actor/pg_loss``)."""
        prompts = self._prompt_batch(batch)
        prompts.meta_info.setdefault("epoch", self.epoch)
        metrics = StepResult(self._trainer.step(prompts.to_cpp()))
        self.global_steps = self._trainer.global_step
        return metrics

    def _next_prompt_batch(self) -> Any:
        """The training set's next batch (a new epoch after the last one)."""
        if self.train_dataloader is None:
            raise ConfigError("collect_rollouts: no prompts (pass a batch, an env, a train_dataset or set "
                              "data.train_files)")
        for _ in range(2):
            if self._batches is None:
                self._batches = iter(self.train_dataloader)
            try:
                return next(self._batches)
            except StopIteration:
                self._batches = None
                self.epoch += 1
        raise DataError("collect_rollouts: the training dataloader yields no batch")

    @distributed.controller_call
    def collect_rollouts(self, batch: Any = None) -> DataProto:
        """The trajectories of a prompt batch (default: the training set's / env's next batch): uid per prompt,
        ``rollout.n`` responses each (interleaved), balanced."""
        prompts = self._prompt_batch(batch if batch is not None else self._next_prompt_batch())
        prompts.meta_info.setdefault("epoch", self.epoch)
        return DataProto.from_cpp(self._trainer.collect_rollouts(prompts.to_cpp()))

    @distributed.controller_call
    def compute_rewards(self, trajectories: DataProto) -> torch.Tensor:
        """Scores ``trajectories`` with the reward function: adds ``token_level_scores`` (and the reward's extra
        columns) to it in place and returns one reward per trajectory, (bs,) float32."""
        scored = DataProto.from_cpp(self._trainer.compute_rewards(trajectories.to_cpp()))
        for key, value in scored.batch.items():
            trajectories.batch[key] = value
        trajectories.non_tensor_batch.update(scored.non_tensor_batch)
        trajectories.meta_info.update(scored.meta_info)
        return scored.batch["token_level_scores"].sum(-1)

    @distributed.controller_call
    def optimize(self, trajectories: DataProto, rewards: Any = None) -> StepResult:
        """Log-probs, reference, values, advantages, critic and actor updates on scored trajectories. ``rewards``:
        (bs,) one per trajectory (placed on its last response token) or (bs, response_length) per token; they
        replace the scores ``compute_rewards`` wrote. Without them the trajectories must be scored already."""
        if rewards is not None:
            trajectories.batch["token_level_scores"] = _scores_as_token_level(rewards, trajectories)
        elif "token_level_scores" not in trajectories.batch:
            raise DataError("optimize: the trajectories have no rewards; call compute_rewards(trajectories) first or "
                            "pass rewards=")
        metrics = StepResult(self._trainer.optimize(trajectories.to_cpp()))
        self.global_steps = self._trainer.global_step
        return metrics

    @property
    def last_batch(self) -> DataProto:
        """The batch of the last step (responses, rewards, advantages, ...)."""
        return DataProto.from_cpp(self._trainer.last_batch)

    # -- validation ---------------------------------------------------------------------------------------
    @distributed.controller_call
    def validate(self, dataset: Any = None) -> dict[str, float]:
        """Generates for the validation set with ``rollout.val_kwargs`` (greedy by default) and returns verl's
        ``val-core/<data_source>/<acc|reward>/mean@N`` (and ``val-aux/...``) metrics."""
        from ..utils.dataset import create_rl_dataloader

        dataset = dataset if dataset is not None else self.val_dataset
        if dataset is None:
            raise ConfigError("validate: no validation data (pass val_dataset or set data.val_files)")
        if isinstance(dataset, (str, os.PathLike)):
            dataset = self._dataset(dataset, "val_files", "val_max_samples")
        loader = create_rl_dataloader(dataset, self.config.data, train=False)
        reward_key = self.config.get("data.reward_fn_key") or "data_source"
        data_sources: list = []
        uids: list = []
        infos: dict[str, list] = defaultdict(list)
        texts: dict[str, list] = defaultdict(list)  # input / output / gts per sample, for the generation logs
        turns: list[int] = []  # __num_turns__ per sample (agent loops)
        for batch_dict in loader:
            prompts = DataProto.from_single_dict(batch_dict)
            out = DataProto.from_cpp(self._trainer.generate_validation(prompts.to_cpp()))
            n = len(out)
            scores = out.batch["token_level_scores"].sum(-1).tolist()
            infos["reward"].extend(scores)
            for key in out.meta_info["reward_extra_keys"]:
                infos[key].extend(out.non_tensor_batch[key].tolist())
            if "__num_turns__" in out.non_tensor_batch:  # agent loops: verl's val-aux/num_turns/*
                turns.extend(out.non_tensor_batch["__num_turns__"].tolist())
            sources = out.non_tensor_batch.get(reward_key)
            data_sources.extend(sources.tolist() if sources is not None else ["unknown"] * n)
            uids.extend(out.non_tensor_batch["uid"].tolist())
            if self._logs_generations():
                for key, values in zip(("input", "output", "gts"), self._generation_texts(out)):
                    texts[key].extend(values)
        infos = {k: v for k, v in infos.items() if len(v) == len(data_sources)}
        if texts:
            self._log_val_generations(texts["input"], texts["output"], texts["gts"], infos)
        metrics = validation_metric_dict(data_sources, uids, infos)
        if turns:
            metrics.update({"val-aux/num_turns/min": float(min(turns)), "val-aux/num_turns/max": float(max(turns)),
                            "val-aux/num_turns/mean": float(sum(turns) / len(turns))})
        return metrics

    # -- generation logs: trainer.log_val_generations, validation_data_dir, rollout_data_dir (verl's JSONL dumps) ----
    def _logs_generations(self) -> bool:
        cfg = self.config
        return bool(cfg.get("trainer.validation_data_dir") or int(cfg.get("trainer.log_val_generations") or 0) > 0)

    def _generation_texts(self, batch: DataProto) -> tuple[list[str], list[str], list[Any]]:
        """(prompts, responses, ground truths) of a generated batch, decoded as verl decodes them (special tokens,
        padding included, skipped)."""
        inputs = self.tokenizer.batch_decode(batch.batch["prompts"], skip_special_tokens=True)
        outputs = self.tokenizer.batch_decode(batch.batch["responses"], skip_special_tokens=True)
        reward_models = batch.non_tensor_batch.get("reward_model")
        gts = [rm.get("ground_truth") if isinstance(rm, Mapping) else None
               for rm in (reward_models.tolist() if reward_models is not None else [None] * len(batch))]
        return inputs, outputs, gts

    def _log_val_generations(self, inputs: list[str], outputs: list[str], gts: list[Any],
                             infos: Mapping[str, list]) -> None:
        from ..utils.tracking import dump_generations, select_val_generations

        scores = list(infos["reward"])
        count = int(self.config.get("trainer.log_val_generations") or 0)
        if count > 0 and self.tracker is not None:
            self.tracker.log_generations(select_val_generations(inputs, outputs, scores, count), self.global_steps)
        val_dir = self.config.get("trainer.validation_data_dir")
        if val_dir:
            dump_generations(os.path.expanduser(str(val_dir)), self.global_steps, inputs, outputs, gts, scores, infos)

    def _dump_rollout(self, prompt_columns: Any) -> None:
        """``trainer.rollout_data_dir``: the last training batch's generations, as verl's ``_log_rollout_data``."""
        from ..utils.tracking import dump_generations

        batch = self.last_batch
        inputs, outputs, gts = self._generation_texts(batch)
        scores = batch.batch["token_level_scores"].sum(-1).tolist()
        extra = {k: v for k, v in batch.non_tensor_batch.items() if k not in prompt_columns and k != "uid"}
        dump_generations(os.path.expanduser(str(self.config.get("trainer.rollout_data_dir"))), self.global_steps,
                         inputs, outputs, gts, scores, extra)

    # -- the loop -----------------------------------------------------------------------------------------
    def _tracker(self) -> Any:
        from ..utils.tracking import tracking_from_config

        return tracking_from_config(self.config, total_steps=self.total_training_steps)

    def fit(self) -> dict[str, float] | None:
        """verl's training loop: validation before training (``trainer.val_before_train``), ``total_epochs`` x
        batches (or ``total_training_steps``), validation every ``test_freq`` steps and at the end, checkpoints
        every ``save_freq`` steps; every step's metrics to the tracker. Returns the last validation metrics."""
        if self.train_dataloader is None:
            raise ConfigError(f"fit: no training data: data.train_files={self.config.get('data.train_files')!r} "
                              "does not exist and no train_dataset was given")
        self._load_checkpoint()  # on every rank: the replicas resume from the same files
        return self._fit()

    @distributed.controller_call
    def _fit(self) -> dict[str, float] | None:
        cfg = self.config
        self.tracker = tracker = self._tracker()
        last_val: dict[str, float] | None = None
        try:
            if self.val_dataset is not None and cfg.get("trainer.val_before_train"):
                val_metrics = self.validate()
                tracker.log(val_metrics, step=self.global_steps)
                last_val = val_metrics
                if cfg.get("trainer.val_only"):
                    return val_metrics
            total = self.total_training_steps
            if not cfg.get("actor_rollout_ref.hybrid_engine"):
                return self._fit_one_step_off() or last_val
            start_epoch = self.global_steps // len(self.train_dataloader)
            # DAPO dynamic sampling: libverl's GroupFilter gathers the kept groups for the coming step.
            group_filter = _C.trainer.GroupFilter(cfg.cpp) if cfg.get("algorithm.filter_groups.enable") else None
            for epoch in range(start_epoch, int(cfg.get("trainer.total_epochs"))):
                self.epoch = epoch
                if group_filter is not None:
                    group_filter.reset()  # a new epoch starts gathering afresh
                for batch_dict in self.train_dataloader:
                    is_last_step = self.global_steps + 1 >= total
                    prompts = DataProto.from_single_dict(batch_dict, meta_info={"epoch": epoch})
                    if group_filter is not None:
                        self._filter_groups(prompts, group_filter)
                        if not group_filter.ready:
                            continue
                        metrics = self._optimize_filtered(group_filter)
                    else:
                        metrics = self.step(prompts)
                    last_val = self._finish_step(metrics, set(prompts.non_tensor_batch), is_last_step) or last_val
                    if is_last_step:
                        return last_val
            return last_val
        finally:
            tracker.finish()
            self._plot()

    def _validates_after(self, is_last_step: bool) -> bool:
        """Whether validation runs after this step (``trainer.test_freq``, and after the last)."""
        test_freq = int(self.config.get("trainer.test_freq"))
        return self.val_dataset is not None and test_freq > 0 and (
            is_last_step or self.global_steps % test_freq == 0)

    def _finish_step(self, metrics: dict[str, float], prompt_columns: set[str],
                     is_last_step: bool) -> dict[str, float] | None:
        """What follows an update in verl's loop: the rollout dump (``trainer.rollout_data_dir``), a checkpoint
        (``trainer.save_freq``), validation (``trainer.test_freq``) and the tracker. Returns the validation metrics
        when it validated."""
        cfg = self.config
        if cfg.get("trainer.rollout_data_dir"):
            start = time.perf_counter()
            self._dump_rollout(prompt_columns)
            metrics["timing_s/dump_rollout_generations"] = time.perf_counter() - start
        save_freq = int(cfg.get("trainer.save_freq"))
        if save_freq > 0 and (is_last_step or self.global_steps % save_freq == 0):
            start = time.perf_counter()
            self.save_checkpoint()
            metrics["timing_s/save_checkpoint"] = time.perf_counter() - start
        val_metrics = None
        if self._validates_after(is_last_step):
            start = time.perf_counter()
            val_metrics = self.validate()
            metrics["timing_s/testing"] = time.perf_counter() - start
            metrics.update(val_metrics)
        self.tracker.log(metrics, step=self.global_steps)
        return val_metrics

    # -- one-step off-policy (actor_rollout_ref.hybrid_engine=False) -------------------------------------
    @distributed.controller_call
    def submit_rollouts(self, batch: Any = None) -> None:
        """One-step off-policy (``actor_rollout_ref.hybrid_engine=False``, verl's
        ``verl.experimental.one_step_off_policy``): hands the actor's current weights to the rollout engine's own copy
        and generates and scores the trajectories of ``batch`` (default: the training set's next batch) on a thread
        while this process goes on training; ``wait_rollouts()`` returns them. One batch in flight at a time; until it
        is waited for, ``optimize`` may run but not ``step``, ``collect_rollouts`` or ``validate``.

        With a rollout pool (``rollout.n_gpus_per_node`` > 0, under torchrun) the pool's ranks generate it. Called
        from a script's top level, this call returns once the batch is generated: the job's other ranks leave each
        public call together, and the pool's ranks must have finished serving it. ``fit()`` overlaps for real."""
        prompts = self._prompt_batch(batch if batch is not None else self._next_prompt_batch())
        prompts.meta_info.setdefault("epoch", self.epoch)
        self._trainer.submit_rollouts(prompts.to_cpp())

    @distributed.controller_call
    def wait_rollouts(self) -> DataProto:
        """The trajectories ``submit_rollouts`` started, scored (``token_level_scores``); re-raises what generation
        or the reward function raised."""
        return DataProto.from_cpp(self._trainer.wait_rollouts())

    def _fit_one_step_off(self) -> dict[str, float] | None:
        """verl's ``OneStepOffRayTrainer.fit``: batch N+1 is generated (and scored) from the weights after step N-1
        while step N trains -- wait for batch N, hand the weights over and submit batch N+1, update on batch N. The
        staleness of one step is corrected by ``algorithm.rollout_correction`` (``bypass_mode``: the rollout's
        log-probs are the old policy). Before a validation the batch in flight is waited for (the engine validates
        next). A checkpoint resumes at the first batch not yet trained on (the one in flight is generated again)."""
        cfg = self.config
        total = self.total_training_steps
        start_epoch = self.global_steps // len(self.train_dataloader)

        def epochs_of_batches() -> Any:
            for epoch in range(start_epoch, int(cfg.get("trainer.total_epochs"))):
                for batch_dict in self.train_dataloader:
                    yield epoch, batch_dict

        batches = epochs_of_batches()

        def submit_next(steps_ahead: int) -> tuple[int, set[str]] | None:
            """Submits the next batch (None past the last step): its epoch and prompt columns."""
            self._loader_state_ahead = None
            if self.global_steps + steps_ahead >= total:
                return None
            loader_state = self.train_dataloader.state_dict()
            drawn = next(batches, None)
            if drawn is None:
                return None
            epoch, batch_dict = drawn
            prompts = DataProto.from_single_dict(batch_dict, meta_info={"epoch": epoch})
            self.submit_rollouts(prompts)
            self._loader_state_ahead = loader_state
            return epoch, set(prompts.non_tensor_batch)

        last_val = None
        self._trainer.discard_rollouts()  # the loop starts afresh (an earlier fit() may have failed midway)
        current = submit_next(0)
        held = None  # a batch waited for early (before a validation)
        try:
            while current is not None:
                epoch, prompt_columns = current
                trajectories = held if held is not None else self.wait_rollouts()
                held = None
                current = submit_next(1)
                self.epoch = epoch
                is_last_step = current is None
                metrics = self.optimize(trajectories)
                if current is not None and self._validates_after(is_last_step):
                    held = self.wait_rollouts()
                last_val = self._finish_step(metrics, prompt_columns, is_last_step) or last_val
            return last_val
        finally:
            self._loader_state_ahead = None
            self._trainer.discard_rollouts()  # a step failed: its successor (and a batch held) are dropped

    # -- DAPO dynamic sampling (algorithm.filter_groups) ------------------------------------------------
    def _filter_groups(self, prompts: DataProto, group_filter: Any) -> None:
        """Generates and scores one batch; ``group_filter`` (libverl's verl::trainer::GroupFilter,
        verl/trainer/group_filter.h) keeps the groups (uids) whose ``filter_groups.metric`` varies (numpy's std > 0)
        or that have one sample, appended to those gathered (verl's DAPO recipe). Raises DataError when
        ``max_num_gen_batches`` (> 0) batches did not give ``data.train_batch_size`` prompts."""
        batch = self.collect_rollouts(prompts)
        self.compute_rewards(batch)
        group_filter.add(batch.to_cpp())

    def _optimize_filtered(self, group_filter: Any) -> dict[str, float]:
        """optimize() on the first ``data.train_batch_size`` gathered prompts' rows."""
        num_gen = group_filter.num_gen_batches
        metrics = self.optimize(DataProto.from_cpp(group_filter.take()))
        metrics["train/num_gen_batches"] = num_gen
        return metrics

    def _plot(self) -> None:
        path = self.tracker.metrics_path if self.tracker is not None else None
        if not path or not os.path.exists(path):
            return
        try:
            from ..utils.plot import plot_training_curves
        except ImportError:
            return
        png = os.path.splitext(path)[0] + ".png"
        try:
            plot_training_curves(path, png)
            self.plot_path = png
        except ImportError:
            print("verl: matplotlib is not installed; no training-curve plot (pip install verl-cpp[plot])")

    # -- checkpoints --------------------------------------------------------------------------------------
    @property
    def checkpoint_dir(self) -> str:
        return os.path.expanduser(str(self.config.get("trainer.default_local_dir")))

    def _write_model(self, module: Any, directory: str, tokenizer_dir: str | None) -> None:
        import verl.models as models
        from verl.models.transformer import CausalLM, ValueModel

        # The model I/O layer: HF layout (transformers loads it), value heads, sharding, tokenizer files.
        wrapper = (ValueModel if module.value_head else CausalLM)._from_module(module)
        models.save_pretrained(wrapper, directory, tokenizer_dir=tokenizer_dir)

    @distributed.controller_call
    def model_state_dict(self, role: str = "actor") -> dict[str, torch.Tensor]:
        """The whole weights of the ``"actor"`` (``"critic"``, ``"cost_critic"``) model by Hugging Face name, as a
        checkpoint holds them (copies). Over several ranks the weights are ZeRO-3 shards: every rank takes part in
        gathering them, and every rank gets them."""
        module = self._trainer.model_for_checkpoint(role)
        return {name: tensor.detach().clone() for name, tensor in module.state_dict().items()}

    @distributed.controller_call
    def save_checkpoint(self) -> str:
        """Writes ``trainer.default_local_dir/global_step_N/`` (``actor/`` and ``critic/``; ``trainer_state.json``:
        step, KL coefficient, dataloader position) into a temporary directory renamed into place, then
        ``latest_checkpointed_iteration.txt``; keeps ``trainer.max_actor_ckpt_to_keep`` checkpoints. A crash mid-save
        leaves the previous checkpoint and the iteration file as they were. Returns the checkpoint directory.

        In one process a model's directory is a Hugging Face checkpoint (transformers loads it) with ``optim.pt``
        (the AdamW and scheduler state) beside it. Over several ranks, as verl's FSDP checkpoints, every rank writes
        its own shard -- ``model_world_size_N_rank_r.safetensors`` and ``optim_world_size_N_rank_r.safetensors`` --
        beside rank 0's config.json and tokenizer files, and nothing gathers the model; the step directory is renamed
        into place once every rank has written. ``python -m verl.model_merger merge --backend fsdp --local_dir
        .../actor --target_dir hf/`` joins the shards into a Hugging Face checkpoint. Either kind resumes at any
        number of ranks."""
        step = self.global_steps

        def write(tmp: str) -> None:
            tok_dir = self._tokenizer_dir()
            for role in self._trained_roles():
                role_dir = os.path.join(tmp, role)
                if self._trainer.model_sharded(role):
                    self._trainer.save_model_shards(role, role_dir, tok_dir)
                    continue
                module = self._trainer.model_for_checkpoint(role)
                self._write_model(module, role_dir, tok_dir)
                save_lora_adapter(module, role_dir, self.config.get("actor_rollout_ref.model.path"))
                self._trainer.save_optimizer(role, os.path.join(role_dir, "optim.pt"))
            write_json(os.path.join(tmp, "trainer_state.json"), {
                "global_step": step, "epoch": self.epoch, "kl_coef": self._trainer.kl_coef,
                "safe_rlhf_lambda": self._trainer.safe_rlhf_lambda,
                "dataloader": self._loader_state_for_checkpoint()})

        return CheckpointDirectory(self.checkpoint_dir).save(step, write,
                                                             self.config.get("trainer.max_actor_ckpt_to_keep"))

    def _loader_state_for_checkpoint(self) -> dict | None:
        """Where a resume continues: before the batch the one-step off-policy loop drew ahead (in flight, not yet
        trained on), else the dataloader's position."""
        if self._loader_state_ahead is not None:
            return self._loader_state_ahead
        return self.train_dataloader.state_dict() if self.train_dataloader is not None else None

    def _tokenizer_dir(self) -> str | None:
        return tokenizer_dir(self.config.get("actor_rollout_ref.model.tokenizer_path"),
                             self.config.get("actor_rollout_ref.model.path"))

    def _resume_dir(self) -> str | None:
        return CheckpointDirectory(self.checkpoint_dir).resume_dir(self.config.get("trainer.resume_mode"),
                                                                   self.config.get("trainer.resume_from_path"))

    def load_checkpoint(self, path: str) -> None:
        """Restores weights, optimizer and scheduler states, step, KL coefficient, Safe-RLHF's multiplier and
        dataloader position."""
        from verl.models import safetensors

        # A rollout pool's rank trains nothing: the controller sends it the restored weights before it generates.
        for role in [] if self._trainer.is_rollout_pool_rank else self._trained_roles():
            role_dir = os.path.join(path, role)
            if _C.model.is_sharded_checkpoint(role_dir):
                # Per-rank files: at this job's layout every rank reads its own; else each joins them and keeps its
                # slice.
                self._trainer.load_model_shards(role, role_dir)
                continue
            module = self._role_model(role)  # the live (master) module: no gather just to read its settings
            lora_keys = "critic.model.lora_*" if role == "critic" else "actor_rollout_ref.model.lora_*"
            if not restore_lora_adapter(module, role_dir, lora_keys):
                # Every rank reads the whole weights and keeps what it holds (its shards over several ranks).
                self._trainer.load_model_state(role, safetensors.load_checkpoint_dir(role_dir))
            self._trainer.load_optimizer(role, os.path.join(role_dir, "optim.pt"))
        state = read_json(os.path.join(path, "trainer_state.json"))
        self._trainer.global_step = int(state["global_step"])
        self._trainer.kl_coef = float(state["kl_coef"])
        if "safe_rlhf_lambda" in state:  # checkpoints before Safe-RLHF existed keep lambda_init
            self._trainer.safe_rlhf_lambda = float(state["safe_rlhf_lambda"])
        self.global_steps = int(state["global_step"])
        self.epoch = int(state.get("epoch", 0))
        if state.get("dataloader") is not None and self.train_dataloader is not None:
            self.train_dataloader.load_state_dict(state["dataloader"])

    def _role_model(self, role: str) -> Any:
        """The role's own module (its master weights; this rank's shards under ZeRO-3)."""
        return {"actor": self._trainer.actor_model, "critic": self._trainer.critic_model,
                "cost_critic": self._trainer.cost_critic_model}[role]

    def _trained_roles(self) -> list[str]:
        """The models a checkpoint holds, in its directory names."""
        return ["actor"] + [role for role, model in (("critic", self._trainer.critic_model),
                                                     ("cost_critic", self._trainer.cost_critic_model))
                            if model is not None]

    def _load_checkpoint(self) -> None:
        path = self._resume_dir()
        if path is not None:
            self.load_checkpoint(path)

