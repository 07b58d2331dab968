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


def test_build_requirement_pins_the_runtime_torch(repo_root):
    # pip builds the sdist in an isolated environment with [build-system] requires: the torch there is the one
    # verl._C is compiled against, so it must be the very release the wheel runs with.
    import tomllib

    with open(os.path.join(repo_root, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)
    build_torch = [r for r in project["build-system"]["requires"] if re.match(r"torch\b", r)]
    run_torch = [r for r in project["project"]["dependencies"] if re.match(r"torch\b", r)]
    assert len(run_torch) == 1 and run_torch[0].startswith("torch==")
    assert build_torch == run_torch


def test_installed_cmake_package_has_no_path_of_the_build_machine(repo_root):
    # LibTorch and nlohmann_json are found by name / relative to the package, wherever it is installed.
    package = os.path.join(verl.cmake_prefix_path, "verl")
    for name in os.listdir(package):
        with open(os.path.join(package, name)) as f:
            text = f.read()
        assert repo_root not in text, name
        assert "site-packages/torch" not in text, name
        assert "/usr/include" not in text, name
    include = os.path.join(os.path.dirname(verl.__file__), "include", "verl", "third_party", "nlohmann")
    assert os.path.isfile(os.path.join(include, "json.hpp"))
