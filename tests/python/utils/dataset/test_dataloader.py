"""ResumableDataLoader: verl's sampling order (torch RandomSampler with a seeded generator), drop_last, and
exact resume from state_dict."""

from __future__ import annotations

import json

import pytest
import torch
from torch.utils.data import RandomSampler

import verl
from verl.utils.dataset import ResumableDataLoader, create_rl_dataloader


class Numbers:
    """A dataset whose rows say which index they are."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": torch.tensor([i]), "name": f"row{i}"}


def flat(batches):
    return [b["x"].reshape(-1).tolist() for b in batches]


def test_order_equals_torch_random_sampler_over_epochs():
    seed, n = 7, 10
    loader = ResumableDataLoader(Numbers(n), batch_size=3, shuffle=True, seed=seed, drop_last=True)
    generator = torch.Generator()
    generator.manual_seed(seed)
    sampler = RandomSampler(range(n), generator=generator)  # what verl's create_rl_sampler builds
    for _ in range(3):
        expected = list(sampler)
        got = flat(loader)
        assert len(got) == len(loader) == 3  # 10 // 3, the short batch dropped
        assert got == [expected[0:3], expected[3:6], expected[6:9]]
    assert loader.epoch == 3


def test_sequential_keep_last_and_collation():
    loader = ResumableDataLoader(Numbers(5), batch_size=2)
    batches = list(loader)
    assert flat(batches) == [[0, 1], [2, 3], [4]] and len(loader) == 3
    assert batches[0]["x"].shape == (2, 1) and batches[2]["name"].tolist() == ["row4"]


def test_default_seed_is_torch_default_generator():
    a = flat(ResumableDataLoader(Numbers(8), 4, shuffle=True))
    generator = torch.Generator()  # unseeded: torch's fixed default seed, as in verl with data.seed null
    expected = list(RandomSampler(range(8), generator=generator))
    assert a == [expected[:4], expected[4:]]


@pytest.mark.parametrize("stop_after", [0, 1, 2, 3, 4, 5, 6])
def test_resume_continues_exactly(stop_after):
    def make():
        return ResumableDataLoader(Numbers(11), batch_size=4, shuffle=True, seed=3, drop_last=True)

    straight = []
    reference = make()
    for _ in range(3):
        straight += flat(reference)

    first = make()
    seen = []
    state = first.state_dict()
    while len(seen) < stop_after:  # stop mid-epoch or on an epoch boundary
        for batch in first:
            seen += flat([batch])
            state = json.loads(json.dumps(first.state_dict()))  # what a checkpoint would store
            if len(seen) == stop_after:
                break
    resumed = make()
    resumed.load_state_dict(state)
    rest = []
    while len(seen) + len(rest) < len(straight):
        rest += flat(resumed)
    assert seen + rest == straight


def test_state_mismatch_and_bad_arguments():
    loader = ResumableDataLoader(Numbers(6), 2, shuffle=True, seed=1)
    state = loader.state_dict()
    with pytest.raises(verl.DataError, match="dataset_len=6"):
        ResumableDataLoader(Numbers(7), 2, shuffle=True, seed=1).load_state_dict(state)
    with pytest.raises(verl.DataError, match="batch_size=2"):
        ResumableDataLoader(Numbers(6), 3, shuffle=True, seed=1).load_state_dict(state)
    with pytest.raises(verl.ConfigError, match="batch_size"):
        ResumableDataLoader(Numbers(6), 0)
    with pytest.raises(verl.DataError, match="fewer than one batch"):
        ResumableDataLoader(Numbers(3), 4, drop_last=True)


def test_create_rl_dataloader_from_config():
    cfg = verl.load_config(overrides=["data.train_batch_size=4", "data.seed=5", "data.val_batch_size=3"])
    train = create_rl_dataloader(Numbers(10), cfg.data, train=True)
    assert train.batch_size == 4 and train.shuffle and train.drop_last and len(train) == 2
    generator = torch.Generator()
    generator.manual_seed(5)
    expected = list(RandomSampler(range(10), generator=generator))
    assert flat(train) == [expected[:4], expected[4:8]]
    val = create_rl_dataloader(Numbers(10), cfg.data, train=False)
    assert val.batch_size == 3 and not val.shuffle and not val.drop_last and len(val) == 4
    whole = create_rl_dataloader(Numbers(10), verl.load_config().data, train=False)
    assert whole.batch_size == 10  # val_batch_size null: the whole set


# -- config values of the loader, and a damaged state from a checkpoint (issue 21) ----------------------------------
@pytest.mark.parametrize("overrides, match", [
    ({"train_batch_size": "4"}, r"^data\.train_batch_size must be an integer, got str '4'"),
    ({"train_batch_size": 4, "gen_batch_size": 2.5}, r"^data\.gen_batch_size must be an integer"),
    ({"train_batch_size": 0}, r"^data\.train_batch_size must be at least 1, got 0"),
    ({"train_batch_size": 4, "seed": "x"}, r"^data\.seed must be an integer or null, got str 'x'"),
    ({"train_batch_size": 4, "shuffle": "no"}, r"^data\.shuffle must be true or false"),
])
def test_create_rl_dataloader_config_values(overrides, match):
    with pytest.raises(verl.ConfigError, match=match):
        create_rl_dataloader(Numbers(10), overrides, train=True)


def test_loader_arguments_are_checked():
    with pytest.raises(verl.ConfigTypeError, match=r"^data\.validation_shuffle must be true or false"):
        create_rl_dataloader(Numbers(10), {"validation_shuffle": "no"}, train=False)
    with pytest.raises(verl.ConfigTypeError, match=r"^seed must be an integer or null, got float 1\.5"):
        ResumableDataLoader(Numbers(10), 2, shuffle=True, seed=1.5)
    with pytest.raises(verl.ConfigTypeError, match=r"^batch_size must be an integer, got bool True"):
        ResumableDataLoader(Numbers(10), True)


def test_loader_keeps_torch_seed_semantics():
    # negative seeds are torch seeds (libverl's loader takes them too): the order is torch's
    loader = ResumableDataLoader(Numbers(6), 3, shuffle=True, seed=-5)
    generator = torch.Generator()
    generator.manual_seed(-5)
    expected = torch.randperm(6, generator=generator).tolist()
    assert [b["x"].flatten().tolist() for b in loader] == [expected[:3], expected[3:]]


@pytest.mark.parametrize("damage", [
    {"epoch": "1"}, {"batches_done": -1}, {"generator_state": [1, 2, 3]}, {"generator_state": "x"},
    {"generator_state": [256] * 5056}, {"batches_done": None},
])
def test_damaged_loader_state_is_a_data_error(damage):
    loader = ResumableDataLoader(Numbers(6), 2, shuffle=True, seed=1)
    next(iter(loader))
    state = dict(loader.state_dict(), **damage)
    fresh = ResumableDataLoader(Numbers(6), 2, shuffle=True, seed=1)
    with pytest.raises(verl.DataError, match="dataloader state is damaged"):
        fresh.load_state_dict(state)
    with pytest.raises(verl.DataError, match="dataloader state version"):
        fresh.load_state_dict(["not", "a", "dict"])
    fresh.load_state_dict(loader.state_dict())  # the undamaged state still loads and resumes
    assert len([b for b in fresh]) == 2
