"""The crash harness of issue 21 through the bindings: every seed input of the libFuzzer corpora
(tests/fuzz/corpus/<target>/, valid files and the fuzzing findings' reproducers) goes through the Python
API that reads that kind of file, in a child process per target. Each input must load or end in one of
verl.errors' classes -- never a signal, a hang, or another exception class (UnicodeDecodeError,
RecursionError, a library's RuntimeError, pybind11's TypeError)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from isolated import run_isolated  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CORPUS = os.path.join(REPO, "tests", "fuzz", "corpus")
QWEN3 = os.path.join(REPO, "tests", "fixtures", "qwen3-tokenizer")

# Per target: how one input (bytes `data`, a scratch folder `work`) is fed to the Python API.
# The libFuzzer targets read the first byte the same way (tests/fuzz/fuzz_*.cpp).
FEEDERS = {
    "fuzz_config": """
def feed(data, work):
    body = data[1:]
    if data[:1] and data[0] % 2 == 1:
        path = os.path.join(work, "fuzz.yaml")
        open(path, "wb").write(body)
        verl.load_config(path).to_yaml()
    else:  # one override per line, as sys.argv carries them (undecodable bytes surrogate-escaped)
        verl.load_config(overrides=body.decode("utf-8", "surrogateescape").split("\\n")).to_yaml()
""",
    "fuzz_tokenizer": """
QWEN3 = verl.load_tokenizer(QWEN3_DIR)
def feed(data, work):
    text = data.decode("utf-8", "replace")
    ids = [int.from_bytes(data[i:i + 4], "little", signed=True) for i in range(0, len(data) - 3, 4)]
    if data[:1] == b"{":
        path = os.path.join(work, "tokenizer.json")
        open(path, "wb").write(data)
        tokenizer = verl.load_tokenizer(path)
    else:
        tokenizer = QWEN3
    tokenizer.decode(tokenizer.encode(text))
    try:
        tokenizer.decode(ids)
    except verl.VerlError:
        pass
""",
    "fuzz_safetensors": """
from verl.models import safetensors
def feed(data, work):
    path = os.path.join(work, "model.safetensors")
    open(path, "wb").write(data)
    for tensor in safetensors.load_file(path).values():
        tensor.double().sum() if tensor.is_floating_point() else tensor.long().sum()
    safetensors.load(data)
""",
    "fuzz_checkpoint": """
import torch
from verl.models import safetensors
from verl.models.transformer import load_model_config
def feed(data, work):
    if data[:1] and data[0] % 2 == 1:
        path = os.path.join(work, "config.json")
        open(path, "wb").write(data[1:])
        load_model_config(path)
        return
    ckpt = os.path.join(work, "checkpoint")
    os.makedirs(ckpt, exist_ok=True)
    safetensors.save_file({"w": torch.arange(4.0).reshape(2, 2)}, os.path.join(ckpt, "model-00001-of-00001.safetensors"))
    open(os.path.join(ckpt, "model.safetensors.index.json"), "wb").write(data[1:])
    safetensors.load_checkpoint_dir(ckpt)
""",
    "fuzz_rows": """
from verl.utils.dataset import RLHFDataset
QWEN3 = verl.load_tokenizer(QWEN3_DIR)
def feed(data, work):
    path = os.path.join(work, "rows.jsonl" if data[:1] and data[0] % 2 == 1 else "rows.json")
    open(path, "wb").write(data[1:])
    dataset = RLHFDataset(path, QWEN3, {"max_prompt_length": 64, "truncation": "left"})
    for i in range(min(len(dataset), 4)):
        dataset[i]
""",
}

DRIVER = """
import os, sys, tempfile, traceback
import verl
QWEN3_DIR = {qwen3!r}
{feeder}
bad = []
folder = {folder!r}
for name in sorted(os.listdir(folder)):
    data = open(os.path.join(folder, name), "rb").read()
    print("INPUT " + name, file=sys.stderr, flush=True)  # the last one named is the culprit of a crash
    with tempfile.TemporaryDirectory() as work:
        try:
            feed(data, work)
        except verl.VerlError:
            pass
        except Exception as e:
            bad.append(name + ": " + type(e).__module__ + "." + type(e).__name__ + ": " + ascii(str(e))[:300])
if bad:
    raise AssertionError("inputs ending in another class than verl.errors':\\n" + "\\n".join(bad))
"""


@pytest.mark.parametrize("target", sorted(FEEDERS))
def test_corpus_through_the_python_api(target):
    folder = os.path.join(CORPUS, target)
    assert len(os.listdir(folder)) >= 5, f"seed corpus {folder} is missing (tests/fuzz/make_seed_corpus.py)"
    outcome = run_isolated(DRIVER.format(qwen3=QWEN3, feeder=FEEDERS[target], folder=folder), timeout=300)
    assert outcome.returncode == 0 and outcome.exception == "none", outcome.describe()
