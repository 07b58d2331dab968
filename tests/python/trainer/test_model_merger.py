"""verl's ``python -m verl.model_merger`` on verl-cpp checkpoints (issue 18 item 6): ``merge`` writes a Hugging Face
directory that transformers loads with the same logits (actor) and values (critic); ``test`` compares tensor by
tensor; the options verl-cpp cannot honour are errors that say so."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import torch

import verl
from verl.models.checkpoint import load_model, save_pretrained
from trainer_helpers import write_tiny_model

transformers = pytest.importorskip("transformers")


def _checkpoint(tmp_path) -> str:
    """A step's actor directory as the trainer writes it: the model, its tokenizer files and optim.pt."""
    model = write_tiny_model(str(tmp_path / "model"))
    actor = tmp_path / "global_step_1" / "actor"
    shutil.copytree(model, actor)
    torch.save({"not": "weights"}, actor / "optim.pt")
    return str(actor)


def _merge(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verl.model_merger", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def test_merged_actor_loads_in_transformers_with_the_same_logits(tmp_path):
    actor = _checkpoint(tmp_path)
    target = tmp_path / "hf"
    proc = _merge("merge", "--backend", "fsdp", "--local_dir", actor, "--target_dir", str(target), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not (target / "optim.pt").exists()
    assert (target / "tokenizer.json").is_file() and (target / "config.json").is_file()
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(target), torch_dtype=torch.float32).eval()
    ids = torch.randint(0, 300, (2, 11), generator=torch.Generator().manual_seed(0))
    ours = load_model(actor)
    with torch.no_grad():
        torch.testing.assert_close(hf(input_ids=ids).logits, ours(ids), rtol=1e-5, atol=1e-5)
    # verl's test operation: the merged directory equals the checkpoint, tensor by tensor
    proc = _merge("test", "--backend", "fsdp", "--local_dir", actor, "--test_hf_dir", str(target), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_merged_critic_loads_as_a_token_classifier(tmp_path):
    base = load_model(write_tiny_model(str(tmp_path / "model")))
    critic_module = verl._C.model.CausalLM(__import__("json").dumps(base.config), True)
    verl._C.model.init_weights(critic_module, seed=3)
    from verl.models.transformer import ValueModel

    critic_dir = tmp_path / "global_step_1" / "critic"
    save_pretrained(ValueModel._from_module(critic_module), critic_dir)
    target = tmp_path / "hf_critic"
    proc = _merge("merge", "--backend", "fsdp", "--is-value-model", "--local_dir", str(critic_dir), "--target_dir",
                  str(target), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    hf = transformers.AutoModelForTokenClassification.from_pretrained(str(target), torch_dtype=torch.float32).eval()
    ids = torch.randint(0, 300, (2, 7), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(hf(input_ids=ids).logits.squeeze(-1), critic_module.forward(ids), rtol=1e-5,
                                   atol=1e-5)


def test_a_different_checkpoint_fails_the_test_operation(tmp_path):
    actor = _checkpoint(tmp_path)
    other = write_tiny_model(str(tmp_path / "other"), seed=1)
    proc = _merge("test", "--backend", "fsdp", "--local_dir", actor, "--test_hf_dir", other, cwd=tmp_path)
    assert proc.returncode == 2 and "differs" in proc.stderr, proc.stderr


@pytest.mark.parametrize("args,message", [
    (["--backend", "megatron"], "writes no Megatron checkpoints"),
    (["--backend", "fsdp", "--hf_upload_path", "me/model"], "hub is not supported"),
])
def test_options_verl_cpp_cannot_honour_are_errors(tmp_path, args, message):
    actor = _checkpoint(tmp_path)
    proc = _merge("merge", "--local_dir", actor, "--target_dir", str(tmp_path / "hf"), *args, cwd=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert not os.path.exists(tmp_path / "hf")


def test_a_directory_that_is_not_a_checkpoint_is_named(tmp_path):
    proc = _merge("merge", "--backend", "fsdp", "--local_dir", str(tmp_path), "--target_dir", str(tmp_path / "hf"),
                  cwd=tmp_path)
    assert proc.returncode == 2 and "not a verl-cpp checkpoint model directory" in proc.stderr, proc.stderr
