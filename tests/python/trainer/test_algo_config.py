"""verl.trainer.config.AlgoConfig and verl.utils.omega_conf_to_dataclass (issue 16 item 6): the algorithm section of
the config tree as verl's typed dataclass, from a dict, an OmegaConf DictConfig or a verl.Config section."""

from __future__ import annotations

import dataclasses

import pytest
from omegaconf import OmegaConf

import verl
from verl.trainer.config import AlgoConfig, FilterGroupsConfig, KLControlConfig
from verl.utils import omega_conf_to_dataclass

SECTION = {"_target_": "verl.trainer.config.AlgoConfig", "gamma": 0.9, "lam": 0.8, "adv_estimator": "grpo",
           "kl_ctrl": {"_target_": "verl.trainer.config.KLControlConfig", "type": "adaptive", "kl_coef": 0.01},
           "filter_groups": {"enable": True, "metric": "acc"}, "pf_ppo": {"weight_pow": 3.0}}


@pytest.mark.parametrize("make", [dict, OmegaConf.create])
def test_section_with_targets(make):
    cfg = omega_conf_to_dataclass(make(SECTION))
    assert isinstance(cfg, AlgoConfig) and (cfg.gamma, cfg.lam, cfg.adv_estimator) == (0.9, 0.8, "grpo")
    assert cfg.kl_ctrl == KLControlConfig(_target_="verl.trainer.config.KLControlConfig", type="adaptive",
                                          kl_coef=0.01)
    assert cfg.kl_ctrl.horizon == 10000  # default kept
    # no _target_: the field's declared dataclass
    assert cfg.filter_groups == FilterGroupsConfig(enable=True, metric="acc")
    assert cfg.pf_ppo == {"weight_pow": 3.0} and cfg.rollout_correction is None


def test_explicit_type_defaults_and_dict_like_reads():
    cfg = omega_conf_to_dataclass({"gamma": 0.5}, AlgoConfig)
    assert cfg.gamma == 0.5 and cfg.lam == 1.0 and cfg.kl_ctrl == KLControlConfig() and not cfg.use_pf_ppo
    assert cfg.get("gamma") == 0.5 and cfg["adv_estimator"] == "gae" and cfg.get("nope", 7) == 7
    assert list(cfg)[:3] == ["_target_", "gamma", "lam"] and len(cfg) == len(dataclasses.fields(AlgoConfig))
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.gamma = 0.1
    assert omega_conf_to_dataclass({}, AlgoConfig) == AlgoConfig()


def test_the_config_trees_algorithm_section():
    config = verl.load_config(overrides=["algorithm.adv_estimator=rloo", "algorithm.gamma=0.99"])
    cfg = omega_conf_to_dataclass(config["algorithm"], AlgoConfig)
    assert (cfg.adv_estimator, cfg.gamma) == ("rloo", 0.99)
    assert cfg.kl_ctrl.kl_coef == config["algorithm.kl_ctrl.kl_coef"]
    assert cfg.filter_groups.metric == config["algorithm.filter_groups.metric"]


def test_errors_name_the_problem():
    with pytest.raises(verl.ConfigError, match="must contain _target_"):
        omega_conf_to_dataclass({"gamma": 0.5})
    with pytest.raises(verl.ConfigError, match=r"\['gama'\] are not fields of AlgoConfig"):
        omega_conf_to_dataclass({"gama": 0.5}, AlgoConfig)
    with pytest.raises(verl.ConfigError, match="names no importable class"):
        omega_conf_to_dataclass({"_target_": "verl.trainer.config.Nope"})
    with pytest.raises(ValueError, match="must be a dataclass"):
        omega_conf_to_dataclass({"a": 1}, dict)
