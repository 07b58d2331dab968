# The README's two commands -- `make demo` and `make test` -- and the steps they are made of.
# Each installs whatever is missing first (Debian packages, the venv, PyTorch): see tools/setup_env.sh.

VENV      ?= $(HOME)/.cache/verl-cpp/venv
PYTHON    ?= python3
PY        := $(VENV)/bin/python
BUILD_DIR := build/dev
JOBS      ?= $(shell nproc)
STAMP     := $(VENV)/.verl-cpp-setup

.PHONY: all setup build test test-cpp test-cpp-app test-python test-fuzz fuzz fuzz-build test-asan demo bench bench-core-algos bench-rollout bench-model bench-grpo-step clean

all: build

# Re-run only when the dependency lists or the setup script change.
setup: $(STAMP)
$(STAMP): pyproject.toml tools/setup_env.sh
	VENV=$(VENV) PYTHON=$(PYTHON) bash tools/setup_env.sh
	@touch $@

# One CMake build (libverl, verl._C, the C++ tests) in $(BUILD_DIR), installed into the venv as
# the verl-cpp package; ninja and ccache keep rebuilds incremental.
build: setup
	@echo "build: libverl + verl._C + tests -> $(BUILD_DIR), installing verl-cpp into $(VENV)"
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(PY) -m pip install --no-build-isolation --no-deps --disable-pip-version-check -q \
	  -C build-dir=$(BUILD_DIR) -C cmake.define.VERL_BUILD_TESTS=ON .

test: build
	$(MAKE) --no-print-directory test-cpp test-cpp-app test-python test-fuzz

test-cpp:
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

# examples/cpp_app is configured out of tree against the installed package, as a user would.
test-cpp-app:
	cmake -S examples/cpp_app -B build/cpp_app -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_PREFIX_PATH="$$($(PY) -c 'import torch, verl; print(verl.cmake_prefix_path + ";" + torch.utils.cmake_prefix_path)')" >/dev/null
	cmake --build build/cpp_app
	./build/cpp_app/verl_cpp_app

test-python:
	$(PY) -m pytest tests/python -q

# libFuzzer targets for the readers of untrusted input (tests/fuzz), built by clang with ASan + UBSan in
# $(FUZZ_DIR). test-fuzz runs each for FUZZ_RUNS inputs from its seed corpus (10,000 in all, about a minute);
# fuzz runs each for FUZZ_SECONDS.
FUZZ_DIR     := build/fuzz
FUZZ_RUNS    ?= 2000
FUZZ_SECONDS ?= 300
fuzz-build: setup
	CXX=clang++ cmake -S . -B $(FUZZ_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVERL_BUILD_FUZZERS=ON \
	  -DVERL_BUILD_PYTHON=OFF -DPython_EXECUTABLE=$(PY) >/dev/null
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) cmake --build $(FUZZ_DIR) --target verl_fuzzers

test-fuzz: fuzz-build
	bash tests/fuzz/run_fuzzers.sh runs $(FUZZ_RUNS)

fuzz: fuzz-build
	bash tests/fuzz/run_fuzzers.sh seconds $(FUZZ_SECONDS)

# AddressSanitizer + UndefinedBehaviorSanitizer: libverl and the C++ tests built out of tree in $(ASAN_DIR)
# (gcc) and run there, then every fuzz target (clang, ASan + UBSan) over its whole corpus. Not part of
# `make test` (a second full build: ~30 min on 2 cores); run it before a release and after touching a reader.
ASAN_DIR := build/asan
test-asan: fuzz-build
	cmake -S . -B $(ASAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVERL_SANITIZE=address,undefined \
	  -DVERL_BUILD_TESTS=ON -DVERL_BUILD_PYTHON=OFF -DPython_EXECUTABLE=$(PY) >/dev/null
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) cmake --build $(ASAN_DIR) --target verl_tests
	ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_DIR) --output-on-failure -j $(JOBS)
	bash tests/fuzz/run_fuzzers.sh corpus 0

# SFT warm start + GRPO on the arithmetic task (examples/arith/demo.py); writes build/demo/.
DEMO_ARGS ?=
demo: build
	$(PY) examples/arith/demo.py --workdir build/demo $(DEMO_ARGS)

# Every benchmark below, rolled up into benchmarks/RESULTS.md (benchmarks/bench_all.py; < 1 h on 2 cores).
BENCH_ALL_ARGS ?=
bench: build
	VENV=$(VENV) REF_VENV=$(REF_VENV) bash benchmarks/core_algos/setup_reference_venv.sh
	VENV=$(VENV) TRL_VENV=$(TRL_VENV) bash benchmarks/grpo_step/setup_trl_venv.sh
	$(PY) benchmarks/bench_all.py --ref-python $(REF_VENV)/bin/python --trl-python $(TRL_VENV)/bin/python $(BENCH_ALL_ARGS)

# verl-cpp's core_algos vs. verl 0.9.1's Python core_algos (benchmarks/core_algos/): time, peak
# memory, parity. verl 0.9.1 runs from its own venv $(REF_VENV), which shares this venv's torch.
REF_VENV  ?= $(HOME)/.cache/verl-cpp/verl-ref-venv
BENCH_ARGS ?=
bench-core-algos: build
	VENV=$(VENV) REF_VENV=$(REF_VENV) bash benchmarks/core_algos/setup_reference_venv.sh
	$(PY) benchmarks/core_algos/bench_core_algos.py --ref-python $(REF_VENV)/bin/python \
	  --results-md benchmarks/core_algos/RESULTS.md $(BENCH_ARGS)

# verl-cpp's tokenizer and model forward vs. HF tokenizers / transformers (benchmarks/model/).
bench-model: build
	$(PY) benchmarks/model/bench_model.py --results-md benchmarks/model/RESULTS.md $(MODEL_BENCH_ARGS)

# verl-cpp's rollout engine vs. transformers' generate (benchmarks/rollout/): tokens/s, peak RSS, MFU.
ROLLOUT_BENCH_ARGS ?=
bench-rollout: build
	$(PY) benchmarks/rollout/bench_rollout.py $(ROLLOUT_BENCH_ARGS)

# A whole GRPO step: verl-cpp's PPOTrainer vs. TRL's GRPOTrainer (benchmarks/grpo_step/): step time, phase split,
# MFU, reward curve, scaling. TRL runs from its own venv $(TRL_VENV), which shares this venv's torch/transformers.
TRL_VENV ?= $(HOME)/.cache/verl-cpp/trl-venv
GRPO_STEP_BENCH_ARGS ?=
bench-grpo-step: build
	VENV=$(VENV) TRL_VENV=$(TRL_VENV) bash benchmarks/grpo_step/setup_trl_venv.sh
	$(PY) benchmarks/grpo_step/bench_grpo_step.py --trl-python $(TRL_VENV)/bin/python \
	  --results-md benchmarks/grpo_step/RESULTS.md --results-json build/bench/grpo_step.json $(GRPO_STEP_BENCH_ARGS)

clean:
	rm -rf build
