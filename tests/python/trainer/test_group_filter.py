"""verl._C.trainer.GroupFilter (DAPO's algorithm.filter_groups, verl/trainer/group_filter.h) from Python: the kept
groups equal verl's own expression (``np.std(values) > 0 or len(values) == 1``) on random groups, equal values and
long groups included; a Python DataProto's extra-info column is the metric; gathering and the limit as the C++
trainer stages use them (PPOTrainer.fit's DAPO path runs through it: tests/python/trainer/test_ppo_trainer.py)."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

import verl
from verl import _C
from verl.protocol import DataProto


def numpy_kept_rows(uids: list[str], values: list[float]) -> list[int]:
    groups: dict[str, list[float]] = {}
    for uid, value in zip(uids, values):
        groups.setdefault(uid, []).append(value)
    kept = {uid for uid, vals in groups.items() if np.std(vals) > 0 or len(vals) == 1}
    return [i for i, uid in enumerate(uids) if uid in kept]


def test_kept_groups_equal_numpys_std_on_random_groups():
    rng = random.Random(0)
    uids: list[str] = []
    values: list[float] = []
    equal_kept = equal_dropped = 0
    for g in range(3000):
        size = rng.choice([1, 2, 3, 5, 8, 9, 16, 17, 130, 300])
        kind = rng.random()
        if kind < 0.6:  # equal values: numpy's mean may miss them by an ulp
            value = rng.random() * rng.choice([1.0, 10.0, 1e-3, 7.3])
            vals = [value] * size
            varies = bool(np.std(vals) > 0) and size > 1
            equal_kept += varies
            equal_dropped += not varies and size > 1
        elif kind < 0.8:
            vals = [float(rng.randint(0, 1)) for _ in range(size)]
        else:
            vals = [rng.gauss(0, 1) for _ in range(size)]
        uids += [f"g{g}"] * size
        values += vals
    order = list(range(len(uids)))
    rng.shuffle(order)  # groups interleaved, as after balance_batch
    uids = [uids[i] for i in order]
    values = [values[i] for i in order]
    assert _C.trainer.varying_group_rows(uids, values) == numpy_kept_rows(uids, values)
    assert equal_kept > 100 and equal_dropped > 100  # both sides of numpy's rounding were exercised


def scored_batch(uids: list[str], acc: list[float], first_row: int) -> DataProto:
    n = len(uids)
    scores = torch.zeros(n, 3)
    scores[:, -1] = torch.tensor(acc)
    return DataProto.from_dict({"token_level_scores": scores, "responses": torch.zeros(n, 3, dtype=torch.long)},
                               non_tensors={"uid": np.array(uids, dtype=object),
                                            "acc": np.array(acc, dtype=object),
                                            "row": np.array(list(range(first_row, first_row + n)), dtype=object)},
                               meta_info={"timing_s": {"gen": 1.0}, "temperature": 1.0})


def test_gathering_from_python_batches():
    cfg = _C.Config.load("", ["algorithm.filter_groups.metric=acc", "data.train_batch_size=2",
                              "actor_rollout_ref.rollout.n=2", "algorithm.filter_groups.max_num_gen_batches=3"])
    f = _C.trainer.GroupFilter(cfg)
    f.add(scored_batch(["a", "a", "b", "b"], [1.0, 1.0, 0.0, 1.0], 0).to_cpp())
    assert (f.ready, f.num_prompts, f.num_gen_batches) == (False, 1, 1)
    f.add(scored_batch(["c", "c", "d", "d"], [0.5, 0.25, 0.0, 1.0], 4).to_cpp())
    assert (f.ready, f.num_prompts, f.num_gen_batches) == (True, 3, 2)
    batch = DataProto.from_cpp(f.take())
    assert batch.non_tensor_batch["row"].tolist() == [2, 3, 4, 5]
    assert batch.meta_info["timing_s"] == {"gen": 2.0}
    assert (f.ready, f.num_prompts, f.num_gen_batches) == (False, 0, 0)
    for i in range(2):
        f.add(scored_batch(["e", "e"], [1.0, 1.0], 0).to_cpp())
    with pytest.raises(verl.DataError, match="max_num_gen_batches=3"):
        f.add(scored_batch(["e", "e"], [1.0, 1.0], 0).to_cpp())
    with pytest.raises(verl.ConfigError, match="neither a reward extra-info key"):
        _C.trainer.GroupFilter(_C.Config.load("", ["algorithm.filter_groups.metric=accuracy"])).add(
            scored_batch(["a"], [1.0], 0).to_cpp())
