"""Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/): valid inputs of each format
plus the reproducers of issue 21's fuzzing findings. Run once to regenerate; the files are committed.

    python tests/fuzz/make_seed_corpus.py
"""

from __future__ import annotations

import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def safetensors_bytes(tensors: dict[str, tuple[str, list[int], bytes]], metadata: dict | None = None) -> bytes:
    header: dict = {}
    if metadata:
        header["__metadata__"] = metadata
    offset, blobs = 0, []
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def raw_safetensors(header: bytes, data: bytes = b"") -> bytes:
    return struct.pack("<Q", len(header)) + header + data


def tiny_tokenizer(post_processor: object = None) -> dict:
    vocab = {chr(c): i for i, c in enumerate(range(ord("a"), ord("z") + 1))}
    vocab.update({"Ġ": 26, "ab": 27, "abc": 28, "<|endoftext|>": 29})
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": 29, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": post_processor,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": ["a b", "ab c"]},
    }


def main() -> None:
    corpus: dict[str, dict[str, bytes]] = {"fuzz_config": {}, "fuzz_tokenizer": {}, "fuzz_safetensors": {},
                                          "fuzz_checkpoint": {}, "fuzz_rows": {}}

    c = corpus["fuzz_config"]  # first byte: odd = YAML document, even = override lines
    c["grpo.yaml"] = (b"algorithm:\n  adv_estimator: grpo\nactor_rollout_ref:\n  rollout:\n    n: 8\n"
                      b"  actor:\n    optim:\n      lr: 1e-6\ntrainer:\n  total_epochs: 2\n  logger: [console]\n")
    c["overrides.txt"] = (b"algorithm.adv_estimator=grpo\nactor_rollout_ref.rollout.n=4\n+foo.bar=[1, 2]\n"
                          b"~trainer.logger\n++trainer.project_name=x\n")
    c["interpolation.txt"] = b"trainer.experiment_name=${trainer.project_name}\ndata.max_prompt_length=${oc.env:HOME,512}\n"
    c["alias_cycle.txt"] = b"trainer.project_name=&a [1, *a]\n"
    c["alias_cycle.yaml"] = b"actor_rollout_ref: &a [1, *a]\n"
    c["dotted_key.txt"] = b'+foo={"a.b": 1}\n'
    c["bad_utf8.yaml"] = b"trainer:\n  total_epochs: a\xff\n"
    c["yaml_escapes.txt"] = b'trainer.project_name="a\\Nb\\_c"\n'
    lines = [b"l0: &l0 [" + b", ".join([b"lol"] * 10) + b"]"]
    lines += [b"l%d: &l%d [" % (i, i) + b", ".join([b"*l%d" % (i - 1)] * 10) + b"]" for i in range(1, 10)]
    c["billion_laughs.yaml"] = b"\n".join(lines) + b"\n"

    t = corpus["fuzz_tokenizer"]
    t["tiny.json"] = json.dumps(tiny_tokenizer()).encode()
    t["template_processing.json"] = json.dumps(tiny_tokenizer({
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [29], "tokens": ["<|endoftext|>"]}},
    })).encode()
    t["template_bad_ids.json"] = t["template_processing.json"].replace(b'"ids": [29]', b'"ids": ["x"]')
    nested: object = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    for _ in range(200):
        nested = {"type": "Sequence", "processors": [nested]}
    t["nested_sequence.json"] = json.dumps(tiny_tokenizer(nested)).encode()
    t["huge_number.json"] = t["tiny.json"].replace(b'"dropout": null', b'"dropout": 1e400')
    t["sparse_id.json"] = t["tiny.json"].replace(b'"abc": 28', b'"abc": 268435455')
    t["text_chat.txt"] = "<|im_start|>user\nWhat is 12*10? Ünïcödé 😀\n<|im_end|>\n".encode()
    t["text_bytes.bin"] = bytes(range(256))

    s = corpus["fuzz_safetensors"]
    s["f32.safetensors"] = safetensors_bytes({"w": ("F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4))}, {"format": "pt"})
    s["mixed.safetensors"] = safetensors_bytes({
        "a": ("BF16", [3], b"\x80\x3f" * 3), "b": ("I64", [1, 2], struct.pack("<2q", -1, 7)),
        "c": ("F16", [0], b""), "d": ("BOOL", [2], b"\x01\x00"), "e": ("U8", [], b"\x05")})
    s["absurd_header_length.safetensors"] = struct.pack("<Q", 1 << 62) + b"{}"
    s["offsets_past_end.safetensors"] = raw_safetensors(b'{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}', b"\0" * 8)
    s["deep_shape.safetensors"] = raw_safetensors(b'{"w":{"dtype":"F32","shape":' + b"[" * 300 + b"]" * 300
                                                  + b',"data_offsets":[0,0]}}')
    s["shape_overflow.safetensors"] = raw_safetensors(
        b'{"w":{"dtype":"F64","shape":[4611686018427387904,4],"data_offsets":[0,8]}}', b"\0" * 8)
    s["bad_utf8_name.safetensors"] = raw_safetensors(b'{"w\xff":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', b"\0" * 4)

    k = corpus["fuzz_checkpoint"]
    index = {"metadata": {"total_size": 16}, "weight_map": {"w": "model-00001-of-00001.safetensors"}}
    k["index_ok.json"] = b"\0" + json.dumps(index).encode()
    k["index_traversal.json"] = b"\0" + json.dumps({"weight_map": {"w": "../model-00001-of-00001.safetensors"}}).encode()
    k["index_absolute.json"] = b"\0" + json.dumps({"weight_map": {"w": "/etc/passwd"}}).encode()
    k["index_long_name.json"] = b"\0" + json.dumps({"weight_map": {"w": "x" * 300}}).encode()
    k["index_missing_tensor.json"] = b"\0" + json.dumps({"weight_map": {"v": "model-00001-of-00001.safetensors"}}).encode()
    qwen2 = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
             "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
             "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": True,
             "torch_dtype": "float32", "hidden_act": "silu"}
    k["config_qwen2.json"] = b"\1" + json.dumps(qwen2).encode()
    k["config_huge_layers.json"] = b"\1" + json.dumps(dict(qwen2, num_hidden_layers=1_000_000_000)).encode()
    # ZeRO-3 shard layouts (first byte 2 mod 4): a tiny Qwen2's parameters at N = 4 laid out for a TP-2 rollout, and
    # bounds a file must not get past.
    params = [["model.embed_tokens.weight", [17, 8]], ["model.layers.0.self_attn.q_proj.weight", [8, 8]],
              ["model.layers.0.self_attn.q_proj.bias", [8]], ["model.layers.0.self_attn.o_proj.weight", [8, 8]],
              ["model.layers.0.mlp.down_proj.weight", [8, 12]], ["model.layers.0.input_layernorm.weight", [8]],
              ["model.norm.weight", [8]], ["lm_head.weight", [17, 8]]]
    k["layout_tp2.json"] = b"\2" + json.dumps({"world_size": 4, "generation_tp": 2, "parameters": params}).encode()
    k["layout_tp1.json"] = b"\2" + json.dumps({"world_size": 3, "generation_tp": 1, "parameters": params}).encode()
    k["layout_tp_not_dividing.json"] = b"\2" + json.dumps({"world_size": 4, "generation_tp": 3, "parameters": params}).encode()
    k["layout_huge_layer.json"] = b"\2" + json.dumps({"world_size": 2, "generation_tp": 1, "parameters": [
        ["model.layers.99999999999999999999.w", [2]]]}).encode()
    # Fuzzing finds of the layout reader: a 1-D vocabulary weight (tensor_parallel_shard needs 2-D rows), and a
    # parameter named twice.
    k["layout_1d_vocab.json"] = b"\2" + json.dumps({"world_size": 4, "generation_tp": 2, "parameters": [
        ["lm_head.weight", [8]]]}).encode()
    k["layout_twice.json"] = b"\2" + json.dumps({"world_size": 2, "generation_tp": 1, "parameters": [
        ["model.norm.weight", [8]], ["model.norm.weight", [8]]]}).encode()
    k["layout_overflow.json"] = b"\2" + json.dumps({"world_size": 2, "generation_tp": 1, "parameters": [
        ["w", [2 ** 40, 2 ** 40]]]}).encode()
    k["config_huge_vocab.json"] = b"\1" + json.dumps(dict(qwen2, vocab_size=2**62, hidden_size=2**40)).encode()
    k["config_deep.json"] = b"\1" + json.dumps(dict(qwen2, rope_scaling=None)).encode().replace(
        b'"rope_scaling": null', b'"rope_scaling": ' + b"[" * 1000 + b"]" * 1000)

    r = corpus["fuzz_rows"]  # first byte: odd = .jsonl, even = .json
    row = {"data_source": "arith", "prompt": [{"role": "user", "content": "What is 12*10?"}], "ability": "math",
           "reward_model": {"style": "rule", "ground_truth": "120"}, "extra_info": {"index": 0, "split": "train"}}
    r["rows.jsonl"] = b"\1" + b"\n".join(json.dumps(dict(row, extra_info={"index": i})).encode() for i in range(3)) + b"\n"
    r["rows.json"] = b"\0" + json.dumps([row, row]).encode()
    r["bad_utf8.jsonl"] = b"\1" + json.dumps(row).encode().replace(b"What", b"Wh\xffat") + b"\n"
    r["deep.jsonl"] = b"\1" + json.dumps(dict(row, extra_info={"index": 0})).encode().replace(
        b'"index": 0', b'"index": 0, "x": ' + b"[" * 1000 + b"]" * 1000) + b"\n"
    r["surrogate.jsonl"] = b"\1" + json.dumps(row).encode().replace(b"What", b"\\ud800What") + b"\n"
    r["long_prompt.jsonl"] = b"\1" + json.dumps(dict(row, prompt=[{"role": "user", "content": "12 " * 200}])).encode() + b"\n"

    for name in list(c):
        c[name] = (b"\1" if name.endswith(".yaml") else b"\0") + c[name]

    for target, files in corpus.items():
        folder = os.path.join(HERE, "corpus", target)
        os.makedirs(folder, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
