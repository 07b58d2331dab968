"""A clone tests itself (issue 40 item 3): nothing under tests/ reads a file outside the repository -- the Qwen3
tokenizer once came from the workspace's ../shared/fixtures, so a user's clone failed its own crash harness and
skipped ~150 tests -- and no test skips because a fixture of ours is missing."""

import os
import re

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = os.path.join(REPO_ROOT, "tests")
SOURCE_SUFFIXES = (".py", ".cpp", ".h", ".sh", ".txt", ".cmake", ".toml", ".cfg", ".ini")

# A path that climbs out of the checkout towards a sibling folder: "../shared", os.path.join(ROOT, "..", "shared"),
# VERL_SOURCE_DIR "/../x".
OUTSIDE = re.compile(r"""\.\./shared|["']\.\.["']\s*,\s*["']shared["']|_DIR\s*"/\.\./|SOURCE_DIR\}/\.\./""")


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
    for old in ('os.path.join(REPO_ROOT, "..", "shared", "fixtures", "qwen3-tokenizer")',
                'const char* kQwen3Dir = VERL_SOURCE_DIR "/../shared/fixtures/qwen3-tokenizer";',
                'VERL_FUZZ_QWEN3_TOKENIZER="${PROJECT_SOURCE_DIR}/../shared/fixtures/qwen3-tokenizer/tokenizer.json"'):
        assert OUTSIDE.search(old), old
    assert not OUTSIDE.search('os.path.join(REPO_ROOT, "tests", "fixtures", "qwen3-tokenizer")')
