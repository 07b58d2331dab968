"""``LLM.generate_async`` / ``generate_stream`` / ``abort`` (issue 19 item 1): asyncio callers submit requests one by
one while the C++ engine thread batches them all. Outputs equal ``generate``'s for the same seeded requests, streamed
tokens concatenate to the outputs, cancelling or aborting frees the request's KV blocks at once, and bad requests
raise at submit."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest
import torch

from verl import _C
from verl.models.transformer import CausalLM
from verl.rollout import LLM, SamplingParams, TokenDelta

VOCAB = 50
EOS = 49


@pytest.fixture(scope="module")
def model():
    config = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": VOCAB, "hidden_size": 32,
              "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
              "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
              "tie_word_embeddings": False, "eos_token_id": EOS}
    module = _C.model.CausalLM(json.dumps(config))
    _C.model.init_weights(module, seed=0, initializer_range=0.3)
    return CausalLM._from_module(module)


def prompts(count):
    g = torch.Generator().manual_seed(0)
    return [torch.randint(1, EOS, (3 + (5 * i) % 17,), generator=g).tolist() for i in range(count)]


def params(i, **kw):
    return SamplingParams(**{"n": 1 + i % 2, "temperature": 1.0, "top_p": 0.9, "seed": 1000 + i,
                             "max_tokens": 6 + 4 * i, **kw})


def test_concurrent_requests_equal_generate(model):
    llm = LLM(model, block_size=4, max_num_seqs=8)
    ps = prompts(6)
    want = llm.generate(prompt_token_ids=ps, sampling_params=[params(i) for i in range(6)])

    async def one(i):
        await asyncio.sleep(0.002 * i)  # arrivals while the others decode
        return await llm.generate_async(ps[i], params(i))

    async def main():
        return await asyncio.gather(*(one(i) for i in range(6)))

    got = asyncio.run(main())
    for g, w in zip(got, want):
        assert [c.token_ids for c in g.outputs] == [c.token_ids for c in w.outputs]
        assert [c.finish_reason for c in g.outputs] == [c.finish_reason for c in w.outputs]
        for a, b in zip(g.outputs, w.outputs):
            torch.testing.assert_close(torch.tensor(a.logprobs), torch.tensor(b.logprobs))
    assert llm.stats()["num_free_blocks"] == llm.stats()["num_blocks"]


def test_stream_concatenates_to_the_output(model):
    llm = LLM(model, block_size=4)
    p = prompts(3)[2]

    async def main():
        tokens: dict[int, list[int]] = {}
        async for delta in llm.generate_stream(p, params(1)):
            assert isinstance(delta, TokenDelta)
            tokens.setdefault(delta.index, []).append(delta.token_id)
        return tokens, await llm.generate_async(p, params(1))

    tokens, out = asyncio.run(main())
    assert tokens == {c.index: c.token_ids for c in out.outputs}
    assert len(tokens) == 2


def test_cancel_and_abort_free_the_request(model):
    llm = LLM(model, block_size=4)
    long = params(0, n=2, max_tokens=400, ignore_eos=True)

    async def main():
        task = asyncio.create_task(llm.generate_async(prompts(1)[0], long))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # abort through a stream's request id: the stream ends, the other request carries on
        other = asyncio.create_task(llm.generate_async(prompts(2)[1], params(1, max_tokens=5)))
        seen = 0
        async with contextlib.aclosing(llm.generate_stream(prompts(3)[2], long)) as stream:
            async for delta in stream:
                seen += 1
                if seen == 4:
                    assert llm.abort(delta.request_id)
        assert 4 <= seen < 800
        return await other

    other = asyncio.run(main())
    assert all(len(c.token_ids) <= 5 for c in other.outputs)
    stats = llm.stats()
    assert stats["num_free_blocks"] == stats["num_blocks"]
    assert llm._front.num_in_flight == 0


def test_bad_requests_raise_at_submit_and_sync_generate_waits_for_async(model):
    llm = LLM(model, block_size=4)

    async def bad():
        await llm.generate_async([VOCAB + 3], params(0))

    with pytest.raises(ValueError, match="outside the vocabulary"):
        asyncio.run(bad())

    async def mixed():
        task = asyncio.create_task(llm.generate_async(prompts(1)[0], params(0, max_tokens=300, ignore_eos=True)))
        await asyncio.sleep(0.02)
        with pytest.raises(RuntimeError, match="async requests are in flight"):
            llm.generate(prompt_token_ids=prompts(1), sampling_params=params(0))
        return await task

    out = asyncio.run(mixed())
    assert len(out.outputs[0].token_ids) == 300
    # with nothing in flight, the synchronous API works again
    assert len(llm.generate(prompt_token_ids=prompts(1), sampling_params=params(0))[0].outputs) == 1


def test_a_conversations_next_turn_reuses_its_cached_prefix(model):
    """enable_prefix_caching: each turn's prompt is the conversation so far plus a tool result; the engine reuses
    the KV blocks of everything already computed and prefills only the new tokens, with the same greedy output."""
    cached = LLM(model, block_size=4, enable_prefix_caching=True)
    plain = LLM(model, block_size=4)
    greedy = SamplingParams(temperature=0.0, max_tokens=8, ignore_eos=True)

    async def conversation(llm):
        ids, answers = prompts(1)[0], []
        for turn in range(3):
            out = await llm.generate_async(ids, greedy)
            answers.append(out.outputs[0].token_ids)
            ids = ids + out.outputs[0].token_ids + [7 + turn, 8, 9, 10, 11]  # the "tool result"
        return answers

    assert asyncio.run(conversation(cached)) == asyncio.run(conversation(plain))
    assert cached.stats()["num_cached_tokens"] >= 2 * 8  # at least the first turn's prompt + answer blocks
    assert plain.stats()["num_cached_tokens"] == 0
    assert cached.stats()["num_prefill_tokens"] < plain.stats()["num_prefill_tokens"]
