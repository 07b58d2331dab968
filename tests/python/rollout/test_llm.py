"""verl.rollout.LLM: parity with transformers' greedy generate, teacher-forced log-probs, verl's
generate_sequences output conventions, prefix-sharing groups, bad parameters, weights and memory
hooks, replicas."""

import pytest
import torch

import verl
from verl.models.transformer import CausalLM
from verl.protocol import DataProto
from verl.rollout import LLM, RolloutReplicas, SamplingParams

transformers = pytest.importorskip("transformers")

VOCAB = 50
EOS = 49


def hf_config():
    return transformers.Qwen2Config(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                    rms_norm_eps=1e-6, rope_theta=10000.0, tie_word_embeddings=False,
                                    initializer_range=0.3, eos_token_id=EOS, pad_token_id=0)


@pytest.fixture(scope="module")
def pair():
    torch.manual_seed(0)
    cfg = hf_config()
    hf = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa").eval()
    ours = CausalLM(cfg.to_dict())
    ours.load_state_dict(hf.state_dict())
    return hf, ours


def prompts(count, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(1, EOS, (3 + (5 * i) % 17,), generator=g).tolist() for i in range(count)]


def test_greedy_matches_transformers_generate(pair):
    hf, ours = pair
    llm = LLM(ours, block_size=4)
    ps = prompts(6)
    outs = llm.generate(prompt_token_ids=ps, sampling_params=SamplingParams(temperature=0.0, max_tokens=10, ignore_eos=True))
    for p, out in zip(ps, outs):
        with torch.no_grad():
            ref = hf.generate(torch.tensor([p]), max_new_tokens=10, do_sample=False, eos_token_id=None,
                              pad_token_id=0)[0, len(p):].tolist()
        assert out.prompt_token_ids == p
        assert out.outputs[0].token_ids == ref
        assert out.outputs[0].finish_reason == "length"


def test_logprobs_are_teacher_forced_temperature_scaled(pair):
    _, ours = pair
    llm = LLM(ours, block_size=4)
    ps = prompts(4, 1)
    outs = llm.generate(prompt_token_ids=ps, sampling_params=SamplingParams(n=3, temperature=0.8, top_p=0.9,
                                                                            max_tokens=12, seed=3))
    for p, out in zip(ps, outs):
        assert len(out.outputs) == 3
        for c in out.outputs:
            full = torch.tensor([p + c.token_ids])
            with torch.no_grad():
                logits = ours(full)[0, len(p) - 1:-1]
            ref = torch.log_softmax(logits / 0.8, -1).gather(1, torch.tensor(c.token_ids)[:, None])[:, 0]
            assert torch.allclose(torch.tensor(c.logprobs), ref, atol=1e-5, rtol=0)
            if c.finish_reason == "stop":
                assert c.token_ids[-1] == EOS
            else:
                assert len(c.token_ids) == 12 and EOS not in c.token_ids


def left_pad(rows, pad=0):
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, width - len(r):] = torch.tensor(r)
        mask[i, width - len(r):] = 1
    pos = (mask.cumsum(-1) - 1).clamp_min(0)
    return ids, mask, pos


def test_generate_sequences_follows_verl_conventions(pair):
    _, ours = pair
    llm = LLM(ours, block_size=4)
    base = prompts(3, 2)
    rows = [r for r in base for _ in range(4)]  # DataProto.repeat(4, interleave=True)
    ids, mask, pos = left_pad(rows)
    data = DataProto.from_dict({"input_ids": ids, "attention_mask": mask, "position_ids": pos},
                               non_tensors={"uid": [str(i // 4) for i in range(12)]},
                               meta_info={"eos_token_id": EOS, "pad_token_id": 0})
    out = llm.generate_sequences(data, SamplingParams(temperature=1.0, max_tokens=16, seed=5))
    b = out.batch
    assert set(b.keys()) == {"prompts", "responses", "input_ids", "attention_mask", "position_ids", "response_mask",
                             "rollout_log_probs"}
    assert b["responses"].shape == (12, 16) and b["input_ids"].shape == (12, ids.shape[1] + 16)
    assert torch.equal(b["prompts"], ids)
    assert torch.equal(b["input_ids"], torch.cat([ids, b["responses"]], -1))
    # verl's get_response_mask: ones up to and including the first EOS.
    eos = (b["responses"] == EOS).int()
    resp_mask = ((eos.cumsum(1) - eos) == 0).long()
    lengths = b["response_mask"].sum(1)
    for i in range(12):
        n = int(lengths[i])
        assert torch.equal(b["response_mask"][i], resp_mask[i] * (torch.arange(16) < n).long())
        assert torch.all(b["responses"][i, n:] == 0)
        assert torch.all(b["rollout_log_probs"][i, n:] == 0)
        assert torch.all(b["rollout_log_probs"][i, :n] < 0)
    assert torch.equal(b["attention_mask"], torch.cat([mask, b["response_mask"]], -1))
    expect_pos = torch.cat([pos, pos[:, -1:] + torch.arange(1, 17)], -1)
    assert torch.equal(b["position_ids"], expect_pos)
    assert list(out.non_tensor_batch["uid"]) == [str(i // 4) for i in range(12)]
    # Row i samples as a request seeded 5 + i; the 4 rows of a prompt shared one prefill.
    stats = llm.stats()
    assert stats["num_prefill_tokens"] == sum(len(r) for r in base)
    for i in (0, 5, 11):
        single = llm.generate(prompt_token_ids=[rows[i]], sampling_params=SamplingParams(max_tokens=16, seed=5 + i))
        n = int(lengths[i])
        assert b["responses"][i, :n].tolist() == single[0].outputs[0].token_ids
        assert torch.allclose(b["rollout_log_probs"][i, :n], torch.tensor(single[0].outputs[0].logprobs))
    # do_sample=False: greedy, identical rows give identical responses.
    greedy = llm.generate_sequences(DataProto.from_dict({"input_ids": ids, "attention_mask": mask,
                                                         "position_ids": pos}, meta_info={"do_sample": False}),
                                    SamplingParams(max_tokens=8))
    r = greedy.batch["responses"]
    assert r.shape == (12, 8) and torch.equal(r[0], r[3]) and torch.equal(r[4], r[7])


@pytest.mark.parametrize("kwargs, name", [
    (dict(top_p=0.0), "top_p"), (dict(top_p=1.2), "top_p"), (dict(n=0), "n must"), (dict(max_tokens=-1), "max_tokens"),
    (dict(temperature=-1.0), "temperature"), (dict(top_k=-3), "top_k"), (dict(min_p=2.0), "min_p"),
])
def test_bad_sampling_params_raise_value_error(kwargs, name):
    with pytest.raises(ValueError, match=name):
        SamplingParams(**kwargs)


def test_bad_prompts_raise_value_error(pair):
    _, ours = pair
    llm = LLM(ours, block_size=4, max_model_len=32)
    with pytest.raises(ValueError, match="max_model_len"):
        llm.generate(prompt_token_ids=[[1] * 40])
    with pytest.raises(ValueError, match="prompt_token_ids"):
        llm.generate(prompt_token_ids=[[1, VOCAB]])
    with pytest.raises(ValueError, match="prompt_token_ids"):
        llm.generate(prompt_token_ids=[[-1]])
    with pytest.raises(ValueError, match="stop_token_ids"):
        llm.generate(prompt_token_ids=[[1, 2]], sampling_params=SamplingParams(stop_token_ids=[VOCAB + 3]))
    with pytest.raises(ValueError, match="tokenizer"):
        llm.generate(["text needs a tokenizer"])
    assert isinstance(verl.InvalidArgumentError("x"), ValueError)


def test_weights_sleep_and_replicas(pair):
    hf, ours = pair
    torch.manual_seed(1)
    model = CausalLM(hf_config().to_dict())
    llm = LLM(model, block_size=4, seed=7)
    ps = prompts(5, 4)
    sp = SamplingParams(max_tokens=10, seed=11, n=2)
    before = [c.token_ids for o in llm.generate(prompt_token_ids=ps, sampling_params=sp) for c in o.outputs]
    llm.update_weights(ours.state_dict())  # now the pair's weights
    after = [c.token_ids for o in llm.generate(prompt_token_ids=ps, sampling_params=sp) for c in o.outputs]
    ref = [c.token_ids for o in LLM(ours, block_size=4).generate(prompt_token_ids=ps, sampling_params=sp)
           for c in o.outputs]
    assert after == ref and before != ref
    llm.sleep()
    with pytest.raises(ValueError, match="wake_up"):
        llm.generate(prompt_token_ids=ps, sampling_params=sp)
    llm.wake_up()
    assert [c.token_ids for o in llm.generate(prompt_token_ids=ps, sampling_params=sp) for c in o.outputs] == ref
    replicas = RolloutReplicas([LLM(ours, block_size=4), LLM(ours, block_size=4), LLM(ours, block_size=4)])
    outs = replicas.generate(ps, sp)
    assert [c.token_ids for o in outs for c in o.outputs] == ref
    assert [o.prompt_token_ids for o in outs] == ps
    assert replicas.last_assignment[:3] == [0, 1, 2]


def test_llm_from_checkpoint_directory(pair, tmp_path):
    hf, ours = pair
    hf.save_pretrained(tmp_path)
    llm = LLM(str(tmp_path), block_size=4)
    ps = prompts(3, 6)
    sp = SamplingParams(temperature=0.0, max_tokens=8, ignore_eos=True)
    got = [o.outputs[0].token_ids for o in llm.generate(prompt_token_ids=ps, sampling_params=sp)]
    ref = [o.outputs[0].token_ids for o in LLM(ours, block_size=4).generate(prompt_token_ids=ps, sampling_params=sp)]
    assert got == ref


def test_async_scheduling_gives_the_synchronous_outputs(pair):
    # The Python switch reaches the engine: steps launched ahead of the previous step's read-back (off by default on
    # the CPU) give the synchronous loop's tokens and finish reasons, and its log-probs to float32 rounding (a step
    # ahead also computes the rows of samples that stopped, and a CPU GEMM's last bits can depend on the batch size).
    _, ours = pair
    ps = prompts(6, 8)
    sp = SamplingParams(n=2, temperature=1.0, max_tokens=14, seed=5)

    def run(**kwargs):
        llm = LLM(ours, block_size=4, **kwargs)
        outs = llm.generate(prompt_token_ids=ps, sampling_params=sp)
        return [(c.token_ids, torch.tensor(c.logprobs), c.finish_reason) for o in outs for c in o.outputs], \
            llm.engine.stats()

    default, default_stats = run()
    sync, sync_stats = run(async_scheduling=False)
    ahead, ahead_stats = run(async_scheduling=True)
    assert default_stats["num_async_steps"] == sync_stats["num_async_steps"] == 0
    assert ahead_stats["num_async_steps"] > ahead_stats["num_steps"] // 2
    for (tokens, logprobs, reason), (sync_tokens, sync_logprobs, sync_reason), (tokens0, logprobs0, _) in zip(
            ahead, sync, default):
        assert tokens == sync_tokens == tokens0 and reason == sync_reason
        assert torch.equal(sync_logprobs, logprobs0)
        assert torch.allclose(logprobs, sync_logprobs, atol=1e-5, rtol=0)
    assert {reason for _, _, reason in ahead} == {"stop", "length"}
