"""The seeds' import forms (issue 16): `from verl.trainer import PPOTrainer`, and verl's subpackages reachable as
attributes after a plain `import verl`."""

import verl


def test_trainer_classes_import_from_verl_trainer():
    from verl.trainer import PPOTrainer, RLConfig, SFTTrainer

    assert PPOTrainer is verl.PPOTrainer
    assert SFTTrainer is verl.SFTTrainer
    assert RLConfig is verl.RLConfig


def test_subpackages_are_attributes_of_verl():
    for name in ("models", "rollout", "data", "envs", "trainer", "utils"):
        assert getattr(verl, name).__name__ == f"verl.{name}"
    assert verl.trainer.PPOTrainer is verl.PPOTrainer
    assert callable(verl.data.get_dataloader) and callable(verl.models.get_actor_model)
    assert isinstance(verl.envs.LanguageModelEnv, type) and isinstance(verl.models.HFActor, type)


def test_unknown_trainer_attribute_is_an_attribute_error():
    try:
        verl.trainer.NoSuchTrainer  # noqa: B018
    except AttributeError as e:
        assert "NoSuchTrainer" in str(e)
    else:
        raise AssertionError("verl.trainer.NoSuchTrainer resolved")
