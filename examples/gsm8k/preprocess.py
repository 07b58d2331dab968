"""GSM8K -> verl's RL dataset schema (train.parquet / test.parquet), as verl's examples/data_preprocess/gsm8k.py.

Each GSM8K row ``{"question": ..., "answer": "...#### 72"}`` becomes::

    {"data_source": "openai/gsm8k",
     "prompt": [{"role": "user", "content": question + " " + INSTRUCTION_FOLLOWING}],
     # INSTRUCTION_FOLLOWING: Let's think step by step and output the final answer after "####".
     "ability": "math",
     "reward_model": {"style": "rule", "ground_truth": "72"},          # after '####', commas removed
     "extra_info": {"split": "train", "index": 0, "answer": answer, "question": question}}

``data_source`` ``openai/gsm8k`` makes the trainer score responses with verl's GSM8K rule
(``verl.utils.reward_score.gsm8k``): 1 when the last ``#### <number>`` of the response equals the ground truth.

Input is local: the Hugging Face dataset's Parquet files (``main/train-00000-of-00001.parquet``) or the original
JSONL files (``grade-school-math/data/train.jsonl``), both with ``question`` / ``answer`` columns; or ``--hf`` to
load ``openai/gsm8k`` with the ``datasets`` library (needs it installed and network access)::

    python examples/gsm8k/preprocess.py --train-file raw/train.parquet --test-file raw/test.parquet \\
        --local_save_dir ~/data/gsm8k [--format parquet|jsonl|both]

A row without a string ``question`` / ``answer``, or whose answer has no ``#### <number>``, stops the run with a
``verl.DataError`` naming the file and line (JSONL) or 1-based row (Parquet).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from verl.errors import DataError
from verl.utils.dataset.rl_dataset import read_rows

DATA_SOURCE = "openai/gsm8k"
ABILITY = "math"
INSTRUCTION_FOLLOWING = 'Let\'s think step by step and output the final answer after "####".'
# verl's extraction: the first "#### <number>" of the reference solution; the scorer compares strings, so the
# thousands separators GSM8K writes ("#### 1,234") are removed here as the scorer removes them from responses.
_SOLUTION_PATTERN = re.compile(r"#### (\-?[0-9\.\,]+)")
FORMATS = ("parquet", "jsonl", "both")

__all__ = ["DATA_SOURCE", "INSTRUCTION_FOLLOWING", "extract_solution", "make_example", "read_raw_rows",
           "preprocess_file", "preprocess_rows", "write_parquet", "write_jsonl", "main"]


def extract_solution(answer: str) -> str | None:
    """The final answer of a GSM8K reference solution (text after ``#### ``, commas removed), or None."""
    found = _SOLUTION_PATTERN.search(answer)
    return found.group(1).replace(",", "") if found else None


def make_example(question: str, answer: str, split: str, index: int, origin: str = "") -> dict[str, Any]:
    """One row of verl's schema from a GSM8K ``question`` / ``answer`` pair (``origin`` names it in errors)."""
    where = f"{origin}: " if origin else ""
    for name, value in (("question", question), ("answer", answer)):
        if not isinstance(value, str) or not value.strip():
            raise DataError(f"{where}'{name}' must be a non-empty string, got {value!r:.80}")
    solution = extract_solution(answer)
    if solution is None:
        raise DataError(f"{where}'answer' has no final answer '#### <number>': ...{answer[-80:]!r}")
    return {
        "data_source": DATA_SOURCE,
        "prompt": [{"role": "user", "content": question + " " + INSTRUCTION_FOLLOWING}],
        "ability": ABILITY,
        "reward_model": {"style": "rule", "ground_truth": solution},
        "extra_info": {"split": split, "index": index, "answer": answer, "question": question},
    }


def _read_parquet(path: str) -> Iterator[tuple[Any, str]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as e:
        raise DataError(f"{path}: reading Parquet needs pyarrow (pip install 'verl-cpp[parquet]' or pyarrow)") from e
    try:
        table = pq.read_table(path)
    except Exception as e:  # pyarrow raises ArrowInvalid / OSError subclasses for corrupt or non-Parquet files
        raise DataError(f"{path}: cannot read Parquet: {type(e).__name__}: {e}") from e
    missing = [c for c in ("question", "answer") if c not in table.column_names]
    if missing:
        raise DataError(f"{path}: no column {missing} (GSM8K files have 'question' and 'answer'; found "
                        f"{table.column_names})")
    for row_number, row in enumerate(table.select(["question", "answer"]).to_pylist(), start=1):
        yield row, f"{path}: row {row_number}"


def read_raw_rows(path: str) -> Iterator[tuple[Any, str]]:
    """(row, origin) pairs of a GSM8K ``.parquet`` or ``.jsonl`` file; origin is ``file:line`` / ``file: row N``
    (JSON through verl's RL-dataset reader, so both name a bad line alike)."""
    if not os.path.isfile(path):
        raise DataError(f"GSM8K file not found: {path}")
    if path.endswith(".parquet"):
        return _read_parquet(path)
    if path.endswith((".jsonl", ".json")):
        return ((row, f"{path}:{line}") for row, line in read_rows(path))
    raise DataError(f"{path}: unsupported file type (expected .parquet or .jsonl with 'question' / 'answer')")


def preprocess_rows(rows: Iterable[tuple[Any, str]], split: str) -> list[dict[str, Any]]:
    """verl rows for (raw row, origin) pairs; ``extra_info.index`` counts rows of the split from 0 (as verl)."""
    out = []
    for index, (row, origin) in enumerate(rows):
        if not isinstance(row, dict):
            raise DataError(f"{origin}: a row must be an object with 'question' and 'answer', got "
                            f"{type(row).__name__}")
        out.append(make_example(row.get("question"), row.get("answer"), split, index, origin))
    return out


def preprocess_file(path: str, split: str) -> list[dict[str, Any]]:
    """verl rows for a local GSM8K file (``.parquet`` or ``.jsonl``)."""
    rows = preprocess_rows(read_raw_rows(os.path.expanduser(path)), split)
    if not rows:
        raise DataError(f"{path}: no rows")
    return rows


def _load_hub_split(split: str) -> list[dict[str, Any]]:
    try:
        import datasets
    except ImportError as e:
        raise DataError("--hf needs the 'datasets' library (pip install datasets) and network access; or download "
                        "the files and pass --train-file / --test-file") from e
    dataset = datasets.load_dataset(DATA_SOURCE, "main", split=split)
    return preprocess_rows(((row, f"{DATA_SOURCE}[{split}] row {i + 1}") for i, row in enumerate(dataset)), split)


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema([
        ("data_source", pa.string()),
        ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
        ("ability", pa.string()),
        ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
        ("extra_info", pa.struct([("split", pa.string()), ("index", pa.int64()), ("answer", pa.string()),
                                  ("question", pa.string())])),
    ])


def write_parquet(rows: list[dict[str, Any]], path: str) -> str:
    """Writes verl rows as Parquet with the column types the datasets library gives verl's own preprocessing."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as e:
        raise DataError("writing Parquet needs pyarrow (pip install 'verl-cpp[parquet]'); or use --format jsonl") \
            from e
    pq.write_table(pa.Table.from_pylist(rows, schema=_schema()), path)
    return path


def write_jsonl(rows: list[dict[str, Any]], path: str) -> str:
    """Writes verl rows as JSON Lines (what verl-cpp's RL dataset reads without pyarrow)."""
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train-file", help="GSM8K train split: .parquet (the HF dataset's) or .jsonl")
    parser.add_argument("--test-file", help="GSM8K test split: .parquet (the HF dataset's) or .jsonl")
    parser.add_argument("--hf", action="store_true", help="load openai/gsm8k with the datasets library instead")
    parser.add_argument("--local_save_dir", "--local_dir", dest="local_save_dir", default="~/data/gsm8k",
                        help="output directory (default ~/data/gsm8k, as verl)")
    parser.add_argument("--format", choices=FORMATS, default="parquet",
                        help="parquet (verl's), jsonl, or both (default parquet)")
    args = parser.parse_args(argv)
    if args.hf and (args.train_file or args.test_file):
        parser.error("--hf and --train-file / --test-file are alternatives; give one")
    if not args.hf and not (args.train_file or args.test_file):
        parser.error("give --train-file and/or --test-file (local GSM8K files), or --hf")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out_dir = os.path.expanduser(args.local_save_dir)
    try:
        splits = {}
        for split, path in (("train", args.train_file), ("test", args.test_file)):
            if args.hf:
                splits[split] = _load_hub_split(split)
            elif path:
                splits[split] = preprocess_file(path, split)
        os.makedirs(out_dir, exist_ok=True)
        for split, rows in splits.items():
            written = []
            if args.format in ("parquet", "both"):
                written.append(write_parquet(rows, os.path.join(out_dir, f"{split}.parquet")))
            if args.format in ("jsonl", "both"):
                written.append(write_jsonl(rows, os.path.join(out_dir, f"{split}.jsonl")))
            print(f"{split}: {len(rows)} rows -> {', '.join(written)}")
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
