"""The installed package: version from one place, the C++ SDK beside the module."""

import os
import re

import verl


def test_version_comes_from_cmakelists(repo_root):
    with open(os.path.join(repo_root, "CMakeLists.txt")) as f:
        declared = re.search(r"project\(verl VERSION ([0-9.]+)", f.read()).group(1)
    assert verl.__version__ == declared
    assert verl._C.__version__ == declared


def test_wheel_ships_the_cmake_package_and_headers():
    package = os.path.join(verl.cmake_prefix_path, "verl")
    assert os.path.isfile(os.path.join(package, "verlConfig.cmake"))
    assert os.path.isfile(os.path.join(package, "verlTargets.cmake"))
    include = os.path.join(os.path.dirname(verl.__file__), "include", "verl")
    assert os.path.isfile(os.path.join(include, "verl.h"))
    assert os.path.isfile(os.path.join(include, "core", "version.h"))
