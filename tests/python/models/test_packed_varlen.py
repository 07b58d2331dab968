"""forward_packed (varlen attention, O(sum len^2)) on many sequences of very different lengths
equals transformers' forward of each sequence alone, and its gradients equal the padded path's."""

import pytest
import torch

transformers = pytest.importorskip("transformers")

from verl.models import CausalLM  # noqa: E402

VOCAB = 96
LENGTHS = [97, 1, 7, 40, 1, 33, 7, 2, 60, 5, 7, 1, 16, 33, 3, 11, 2, 0, 97, 4]


def test_packed_many_lengths_matches_transformers():
    torch.manual_seed(0)
    cfg = transformers.Qwen2Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=112, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    hf = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa").eval()
    ours = CausalLM(cfg.to_dict())
    ours.load_state_dict(hf.state_dict())
    g = torch.Generator().manual_seed(1)
    seqs = [torch.randint(VOCAB, (n,), generator=g) for n in LENGTHS]
    cu = torch.tensor([0] + torch.tensor(LENGTHS).cumsum(0).tolist())
    packed = ours.forward_packed(torch.cat(seqs), cu)
    worst = 0.0
    loss_ref = 0.0
    for i, s in enumerate(seqs):
        if len(s) == 0:
            continue
        with torch.no_grad():
            worst = max(worst, (packed[cu[i]:cu[i + 1]] - hf(input_ids=s[None]).logits[0]).abs().max().item())
        loss_ref = loss_ref + ours(s[None])[0].logsumexp(-1).sum()
    print(f"packed ({len(LENGTHS)} seqs, total {int(cu[-1])}) vs transformers per sequence: max|diff| = {worst:.3e}")
    assert worst <= 1e-4
    loss_ref.backward()
    ref = {n: p.grad.clone() for n, p in ours.named_parameters()}
    for _, p in ours.named_parameters():
        p.grad = None
    packed.logsumexp(-1).sum().backward()
    for n, p in ours.named_parameters():
        torch.testing.assert_close(p.grad, ref[n], atol=1e-5, rtol=1e-4)
