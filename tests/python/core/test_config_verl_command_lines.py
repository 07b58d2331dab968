"""Values verl's own command lines set (issue 16 item 5): ``actor_rollout_ref.rollout.name`` names verl's engines
(vllm, sglang), which select verl-cpp's own; ``trainer.logger=console`` writes one backend as a string."""

from __future__ import annotations

import pytest

import verl
from verl import config_keys, load_config


@pytest.mark.parametrize("name", ["native", "vllm", "sglang"])
def test_rollout_name_choices_are_accepted(name):
    assert load_config(overrides=[f"actor_rollout_ref.rollout.name={name}"])["actor_rollout_ref.rollout.name"] == name


def test_rollout_name_hf_is_refused_naming_the_choices():
    with pytest.raises(verl.ConfigError, match="actor_rollout_ref.rollout.name.*native.*vllm.*sglang"):
        load_config(overrides=["actor_rollout_ref.rollout.name=hf"])


def test_rollout_name_is_honoured_with_the_reason():
    entry = config_keys.find("actor_rollout_ref.rollout.name")
    assert entry.cls == config_keys.HONOURED and "verl-cpp's own engine" in entry.reason


def test_logger_as_a_string_or_a_list():
    assert load_config(overrides=["trainer.logger=console"])["trainer.logger"] == "console"
    assert list(load_config(overrides=["trainer.logger=[console]"])["trainer.logger"]) == ["console"]
    with pytest.raises(verl.ConfigTypeError, match="trainer.logger"):
        load_config(overrides=["trainer.logger=3"])
