"""A clone tests itself (issue 40 item 3): nothing under tests/ reads a file outside the repository -- the Qwen3
tokenizer once came from a folder beside the checkout, so a user's clone failed its own crash harness and
skipped ~150 tests -- and no test skips because a fixture of ours is missing."""

import os
import re

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = os.path.join(REPO_ROOT, "tests")
SOURCE_SUFFIXES = (".py", ".cpp", ".h", ".sh", ".txt", ".cmake", ".toml", ".cfg", ".ini")

# A path that climbs from the checkout's root to a folder beside it: os.path.join(REPO_ROOT, "..", x) in Python,
# VERL_SOURCE_DIR "/../x" in C++, ${PROJECT_SOURCE_DIR}/../x in CMake.
OUTSIDE = re.compile(r"""\bREPO(?:_ROOT)?\s*,\s*["']\.\.["']|SOURCE_DIR\}?\s*"?/\.\./""")


def test_sources():
    found = []
    for folder, _, files in os.walk(TESTS):
        parts = os.path.relpath(folder, TESTS).split(os.sep)
        if "fixtures" in parts or "corpus" in parts:  # data, not code
            continue
        for name in files:
            if not name.endswith(SOURCE_SUFFIXES) or name == os.path.basename(__file__):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    if OUTSIDE.search(line):
                        found.append(f"{os.path.relpath(path, REPO_ROOT)}:{number}: {line.strip()}")
    assert not found, "tests read outside the repository:\n" + "\n".join(found)


def test_fixtures_are_in_the_repository():
    tokenizer = os.path.join(TESTS, "fixtures", "qwen3-tokenizer")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        assert os.path.getsize(os.path.join(tokenizer, name)) > 1000


def test_pattern_catches_the_old_forms():
    # the forms the tests used before the fixture moved in, each of which the scan must flag
    for old in ('os.path.join(REPO_ROOT, "..", "beside", "fixtures", "qwen3-tokenizer")',
                'os.path.join(REPO, "..", "beside", "fixtures", "qwen3-tokenizer")',
                'const char* kQwen3Dir = VERL_SOURCE_DIR "/../beside/fixtures/qwen3-tokenizer";',
                'VERL_FUZZ_QWEN3_TOKENIZER="${PROJECT_SOURCE_DIR}/../beside/fixtures/qwen3-tokenizer/tokenizer.json"'):
        assert OUTSIDE.search(old), old
    for inside in ('os.path.join(REPO_ROOT, "tests", "fixtures", "qwen3-tokenizer")',
                   'sys.path.insert(0, os.path.join(os.path.dirname(HERE), "trainer"))',  # within tests/
                   'VERL_SOURCE_DIR "/tests/fixtures/qwen3-tokenizer"'):
        assert not OUTSIDE.search(inside), inside
