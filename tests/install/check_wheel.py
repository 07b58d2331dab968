"""Checks a built verl-cpp wheel as a release reviewer would, without installing it (issue 22):

- it is a repaired binary wheel (a manylinux tag, not linux_x86_64) for this Python;
- it holds the package, the C++ SDK (headers incl. the vendored json.hpp, libverl, the CMake package) and
  nothing that belongs to the build: no test or fuzz binaries, no object files, no build directory;
- its shared objects need no system library besides glibc / libstdc++ / libgcc and LibTorch's (which the torch
  dependency provides), and their RPATH/RUNPATH entries are relative ($ORIGIN/...);
- no text file (CMake package, Python, headers) mentions an absolute path of the machine it was built on
  (the source or build tree, the venv);
- its size, printed.

    python tests/install/check_wheel.py dist/verl_cpp-*.whl [--forbid PATH ...]
"""

from __future__ import annotations

import argparse
import io
import os
import re
import sys
import zipfile

from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

# What a wheel may NEED besides its own libraries: the toolchain's runtime (every manylinux policy allows them)
# and LibTorch's, resolved through the torch package (libverl's RUNPATH) or loaded by `import torch`.
ALLOWED_NEEDED = re.compile(
    r"^(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|ld-linux-x86-64\.so\.2|"
    r"ld-linux-aarch64\.so\.1|libstdc\+\+\.so\.6|libgcc_s\.so\.1|"
    r"libtorch(_cpu|_cuda|_python)?\.so|libc10(_cuda)?\.so|libgomp\.so\.1)$")
REQUIRED = ["verl/__init__.py", "verl/include/verl/verl.h", "verl/include/verl/core/json.h",
            "verl/include/verl/core/version.h", "verl/include/verl/third_party/nlohmann/json.hpp",
            "verl/lib/cmake/verl/verlConfig.cmake", "verl/lib/cmake/verl/verlTargets.cmake",
            "verl/trainer/config/ppo_trainer.yaml"]
BUILD_ARTIFACTS = re.compile(r"(^|/)(verl_tests|fuzz_[a-z_]+|CMakeFiles|CMakeCache\.txt|build\.ninja)(/|$)|\.(o|a|pch|gch)$")


def dynamic_entries(data: bytes) -> tuple[list[str], list[str]]:
    """(DT_NEEDED entries, DT_RPATH + DT_RUNPATH entries) of an ELF shared object."""
    elf = ELFFile(io.BytesIO(data))
    needed: list[str] = []
    entries: list[str] = []
    for section in elf.iter_sections():
        if not isinstance(section, DynamicSection):
            continue
        for tag in section.iter_tags():
            if tag.entry.d_tag == "DT_NEEDED":
                needed.append(tag.needed)
            elif tag.entry.d_tag == "DT_RPATH":
                entries += [p for p in tag.rpath.split(":") if p]
            elif tag.entry.d_tag == "DT_RUNPATH":
                entries += [p for p in tag.runpath.split(":") if p]
    return needed, entries


def check(wheel: str, forbidden: list[str]) -> list[str]:
    problems: list[str] = []
    name = os.path.basename(wheel)
    if "manylinux" not in name:
        problems.append(f"{name}: not a repaired wheel (no manylinux platform tag; run auditwheel repair)")
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    if f"-{tag}-" not in name:
        problems.append(f"{name}: not built for this Python ({tag})")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        for required in REQUIRED:
            if required not in names:
                problems.append(f"missing {required}")
        for member in names:
            if BUILD_ARTIFACTS.search(member):
                problems.append(f"{member}: a build artifact, not part of the package")
        for member in names:
            data = zf.read(member)
            if data[:4] != b"\x7fELF":
                for path in forbidden:
                    if path.encode() in data:
                        problems.append(f"{member}: mentions {path} (a path of the build machine)")
                continue
            # Binaries are checked for what the loader reads (NEEDED, RPATH/RUNPATH), not for every string: the
            # file names of LibTorch's headers in its assertion messages are harmless, as in torch's own wheels.
            needed, entries = dynamic_entries(data)
            for lib in needed:
                if not ALLOWED_NEEDED.match(lib) and not any(n.endswith("/" + lib) for n in names):
                    problems.append(f"{member}: needs {lib}, which the wheel neither ships nor may rely on")
            for entry in entries:
                if not entry.startswith("$ORIGIN"):
                    problems.append(f"{member}: RPATH/RUNPATH entry {entry!r} is not relative to $ORIGIN")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel")
    parser.add_argument("--forbid", action="append", default=[],
                        help="an absolute path of the build machine that no file may contain (repeatable)")
    args = parser.parse_args()
    with zipfile.ZipFile(args.wheel) as zf:
        unpacked = sum(i.file_size for i in zf.infolist())
        count = len(zf.infolist())
    print(f"wheel {os.path.basename(args.wheel)}: {os.path.getsize(args.wheel) / 2**20:.1f} MiB "
          f"({unpacked / 2**20:.1f} MiB unpacked, {count} files)")
    problems = check(args.wheel, [p for p in args.forbid if p])
    for problem in problems:
        print(f"check_wheel: {problem}", file=sys.stderr)
    if not problems:
        print("check_wheel: contents, dependencies, RPATHs and paths ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
