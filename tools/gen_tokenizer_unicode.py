#!/usr/bin/env python3
"""Generates cpp/src/tokenizer/unicode_tables.cpp: the Unicode data the C++ tokenizer needs to give
the same ids as Hugging Face `tokenizers` (pinned in pyproject.toml's dev group).

Run it from the repository root with the dev venv's interpreter, then commit the output:

    ~/.cache/verl-cpp/venv/bin/python tools/gen_tokenizer_unicode.py

Two kinds of data, each matched to the Unicode version *HF* uses rather than the newest one,
because parity with HF is the point:

* NFC tables (canonical combining classes, canonical decompositions, primary composites). HF's
  NFC normalizer (the `unicode-normalization-alignments` crate) carries Unicode 9.0 data, so
  characters assigned after 9.0 are left alone by it. The tables come from Python's `unicodedata`
  restricted to characters whose Age is <= 9.0 (ages from Perl's Unicode::UCD, part of Debian's
  perl). Normalization data of an assigned character never changes (Unicode stability policy), so
  this subset is exactly Unicode 9.0's.
* Regex character classes. HF runs pre-tokenizer regexes with Oniguruma, whose tables are newer
  (Unicode 16) than those of Debian 12's PCRE2 10.42 (Unicode 14, the same version as this Python's
  `unicodedata`). For every general category we list the characters Oniguruma puts in it that
  Unicode 14 leaves unassigned; the C++ regex translator adds them to `\\p{..}` classes. Oniguruma's
  `\\w` differs from PCRE2's even on old characters, so it is listed in full. Both come from asking
  `tokenizers` itself which characters each class matches.
"""

from __future__ import annotations

import os
import subprocess
import sys
import unicodedata

OUT = os.path.join("cpp", "src", "tokenizer", "unicode_tables.cpp")
NFC_AGE_LIMIT = (9, 0)
PCRE2_UNICODE = "14.0.0"  # Debian 12's libpcre2 10.42; must equal unicodedata's version
CATEGORIES = ["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf",
              "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Co"]

ALL_CPS = [cp for cp in range(0x110000) if not 0xD800 <= cp < 0xE000]
HANGUL_V = range(0x1161, 0x1176)
HANGUL_T = range(0x11A8, 0x11C3)


def ranges(cps):
    """Sorted code points -> [(first, last)] runs."""
    out = []
    for cp in sorted(cps):
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return [tuple(r) for r in out]


def ages(cps):
    """Age (major, minor) of each code point, from Perl's Unicode::UCD."""
    script = 'use Unicode::UCD; while (<STDIN>) { chomp; print Unicode::UCD::charprop($_, "Age"), "\\n"; }'
    out = subprocess.run(["perl", "-e", script], input="\n".join(map(str, cps)), capture_output=True, text=True,
                         check=True).stdout.split()
    assert len(out) == len(cps)
    result = {}
    for cp, age in zip(cps, out):
        if age == "Unassigned":
            result[cp] = (99, 0)
        else:
            major, minor = age[1:].split("_")
            result[cp] = (int(major), int(minor))
    return result


def nfc_tables():
    relevant = [cp for cp in ALL_CPS
                if unicodedata.combining(chr(cp)) or unicodedata.decomposition(chr(cp))]
    age = ages(relevant)
    known = {cp for cp in relevant if age[cp] <= NFC_AGE_LIMIT}

    ccc = {cp: unicodedata.combining(chr(cp)) for cp in known if unicodedata.combining(chr(cp))}
    decomp = {}
    for cp in known:
        d = unicodedata.decomposition(chr(cp))
        if not d or d.startswith("<") or 0xAC00 <= cp <= 0xD7A3:  # compatibility, or Hangul (algorithmic)
            continue
        parts = [int(x, 16) for x in d.split()]
        assert len(parts) in (1, 2), hex(cp)
        decomp[cp] = parts
    compose = {}
    for cp, parts in decomp.items():
        # A primary composite is one NFC keeps: that excludes singletons, non-starter decompositions
        # and the composition exclusions, all of which NFC decomposes for good.
        if len(parts) == 2 and unicodedata.normalize("NFC", chr(cp)) == chr(cp):
            compose[(parts[0], parts[1])] = cp
    # Characters that may change under NFC; a string without any is already normalized.
    unstable = set(ccc)
    unstable |= {cp for cp in decomp if unicodedata.normalize("NFC", chr(cp)) != chr(cp)}
    unstable |= {second for (_, second) in compose}
    unstable |= set(HANGUL_V) | set(HANGUL_T)
    # nfc() skips its table lookup below U+0300.
    assert min(unstable) >= 0x300, hex(min(unstable))
    return ccc, decomp, compose, unstable


def onig_sets(patterns):
    """{pattern: set of code points} that tokenizers' Oniguruma matches for each one-char pattern."""
    from tokenizers import Regex, pre_tokenizers

    result = {}
    for pattern in patterns:
        split = pre_tokenizers.Split(Regex(pattern), behavior="removed")
        matched = set()
        for i in range(0, len(ALL_CPS), 4096):
            chunk = ALL_CPS[i:i + 4096]
            kept = set()
            for piece, _ in split.pre_tokenize_str("".join(map(chr, chunk))):
                kept.update(map(ord, piece))
            matched.update(cp for cp in chunk if cp not in kept)
        result[pattern] = matched
    return result


def category_tables():
    onig = onig_sets([rf"\p{{{c}}}" for c in CATEGORIES] + [r"\w"])
    mine = {c: {cp for cp in ALL_CPS if unicodedata.category(chr(cp)) == c} for c in CATEGORIES}
    # A character may move between subcategories of one major category (U+1171E went from Mn to
    # Mc in Unicode 15): PCRE2 keeps it in the old one, which cannot be subtracted from a class.
    # Only subcategory classes such as \p{Mn} see that; \p{M} and the like stay exact.
    moved = []
    for c in CATEGORIES:
        for cp in sorted(mine[c] - onig[rf"\p{{{c}}}"]):
            new = next(k for k in CATEGORIES if cp in onig[rf"\p{{{k}}}"])
            assert new[0] == c[0], f"U+{cp:04X} moved from {c} to {new}: a major category changed"
            moved.append((cp, c, new))
    moved_cps = {cp for cp, _, _ in moved}
    extras = {}
    for c in CATEGORIES:
        extras[c] = onig[rf"\p{{{c}}}"] - mine[c]
        assert all(unicodedata.category(chr(cp)) == "Cn" or cp in moved_cps for cp in extras[c]), c
    return extras, onig[r"\w"], moved


def emit_ranges(lines, name, rs):
    lines.append(f"const CodepointRange {name}[] = {{")
    row = []
    for first, last in rs:
        row.append(f"{{0x{first:X}, 0x{last:X}}}")
        if len(row) == 6:
            lines.append("    " + ", ".join(row) + ",")
            row = []
    if row:
        lines.append("    " + ", ".join(row) + ",")
    lines.append("};")
    lines.append(f"const std::size_t {name}_size = sizeof({name}) / sizeof({name}[0]);")
    lines.append("")


def main():
    if unicodedata.unidata_version != PCRE2_UNICODE:
        sys.exit(f"this Python has Unicode {unicodedata.unidata_version}; the tables assume {PCRE2_UNICODE}")
    import tokenizers

    ccc, decomp, compose, unstable = nfc_tables()
    extras, word, moved = category_tables()

    lines = [
        "// GENERATED by tools/gen_tokenizer_unicode.py -- do not edit. Unicode data for the tokenizer:",
        "// NFC at Unicode 9.0 (as HF's normalizer) and Oniguruma's newer regex classes (as HF's regexes).",
        f"// Sources: Python {sys.version.split()[0]} unicodedata {unicodedata.unidata_version}, Perl Unicode::UCD ages,",
        f"// tokenizers {tokenizers.__version__}.",
        *(f"// U+{cp:04X} is {new} for Oniguruma but {old} for PCRE2: \\p{{{old}}} still matches it." for cp, old, new in moved),
        '#include "tokenizer/unicode_tables.h"',
        "",
        "namespace verl::tokenizer::tables {",
        "",
    ]
    # Combining classes as runs of equal class.
    runs = []
    for cp in sorted(ccc):
        if runs and runs[-1][1] == cp - 1 and runs[-1][2] == ccc[cp]:
            runs[-1][1] = cp
        else:
            runs.append([cp, cp, ccc[cp]])
    lines.append("const CombiningClassRange kCombiningClass[] = {")
    for i in range(0, len(runs), 5):
        lines.append("    " + ", ".join(f"{{0x{a:X}, 0x{b:X}, {c}}}" for a, b, c in runs[i:i + 5]) + ",")
    lines.append("};")
    lines.append("const std::size_t kCombiningClass_size = sizeof(kCombiningClass) / sizeof(kCombiningClass[0]);")
    lines.append("")
    lines.append("const Decomposition kDecomposition[] = {")
    items = sorted(decomp.items())
    for i in range(0, len(items), 5):
        lines.append("    " + ", ".join(
            f"{{0x{cp:X}, 0x{p[0]:X}, 0x{(p[1] if len(p) > 1 else 0):X}}}" for cp, p in items[i:i + 5]) + ",")
    lines.append("};")
    lines.append("const std::size_t kDecomposition_size = sizeof(kDecomposition) / sizeof(kDecomposition[0]);")
    lines.append("")
    lines.append("const Composition kComposition[] = {")
    items = sorted(compose.items())
    for i in range(0, len(items), 5):
        lines.append("    " + ", ".join(f"{{0x{a:X}, 0x{b:X}, 0x{c:X}}}" for (a, b), c in items[i:i + 5]) + ",")
    lines.append("};")
    lines.append("const std::size_t kComposition_size = sizeof(kComposition) / sizeof(kComposition[0]);")
    lines.append("")
    emit_ranges(lines, "kNfcUnstable", ranges(unstable))
    emit_ranges(lines, "kOnigWord", ranges(word))
    lines.append("const CategoryExtra kCategoryExtras[] = {")
    offset = 0
    flat = []
    for c in CATEGORIES:
        rs = ranges(extras[c])
        lines.append(f'    {{"{c}", {offset}, {len(rs)}}},')
        flat.extend(rs)
        offset += len(rs)
    lines.append("};")
    lines.append("const std::size_t kCategoryExtras_size = sizeof(kCategoryExtras) / sizeof(kCategoryExtras[0]);")
    lines.append("")
    emit_ranges(lines, "kCategoryExtraRanges", flat)
    lines.append("}  // namespace verl::tokenizer::tables")
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {OUT}: {len(runs)} ccc runs, {len(decomp)} decompositions, {len(compose)} composites, "
          f"{len(ranges(unstable))} NFC-unstable runs, {len(ranges(word))} \\w runs, {len(flat)} category extra runs")


if __name__ == "__main__":
    main()
