# The front door. Everything wraps CMake; see README.md.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
MPIRUN ?= mpirun
MPIRUN_FLAGS ?= $(shell [ "$$(id -u)" = 0 ] && echo --allow-run-as-root) --oversubscribe
TEST_LABELS ?= unit|mpi|e2e|analysis|gpu|slurm
# ccache, where installed, makes a rebuild after a pull or a branch switch compile only what changed; the
# sloppiness lets it cache sources compiled with the precompiled headers (cmake/PrecompiledHeaders.cmake).
CCACHE_FLAGS := "-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_SLOPPINESS=pch_defines,time_macros;ccache" \
                -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache
LAUNCHER := $(if $(shell command -v ccache 2>/dev/null),$(CCACHE_FLAGS))

.PHONY: all deps configure build program test run bench bench-gpu report clean

all: build

# What scripts/deps.sh checks follows the goal: the tests (the most), the demo, the benchmarks or the program.
DEPS_GOAL ?= $(firstword $(filter test,$(MAKECMDGOALS)) $(filter run report,$(MAKECMDGOALS)) \
                         $(filter bench,$(MAKECMDGOALS)) $(filter program,$(MAKECMDGOALS)) test)
deps:
	@DEMO_DATA="$(DEMO_DATA)" scripts/deps.sh $(patsubst report,run,$(DEPS_GOAL))

$(BUILD_DIR)/CMakeCache.txt:
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(LAUNCHER) $(CMAKE_FLAGS)

configure: deps $(BUILD_DIR)/CMakeCache.txt

# Everything: the program, the tests and the micro-benchmarks.
build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The program alone (what `make run` needs).
program: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target scalebench

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -L '$(TEST_LABELS)' -j $(JOBS)

# The main job: how training scales and where the time goes. A scaling study of mnist-cnn on
# Fashion-MNIST (1 and 2 CPU ranks, or 1, 2 and 4 GPUs up to those visible) and its report in DEMO_OUT,
# which must not exist yet: results are never overwritten. DEMO_DATA=DIR reads the Fashion-MNIST IDX
# files from DIR instead of Debian's dataset-fashion-mnist.
DEMO_OUT ?= results/demo
DEMO_DATA ?=
run: program
	MPIRUN="$(MPIRUN)" MPIRUN_FLAGS="$(MPIRUN_FLAGS)" DEMO_DATA="$(DEMO_DATA)" scripts/run_demo.sh $(BUILD_DIR) $(DEMO_OUT)

bench: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target scalebench bench_programs
	scripts/run_bench.sh $(BUILD_DIR)

# Every headline figure of docs/performance.md on this GPU node, into results/<gpu>-x<count>-<date>/
# (docs/benchmarks.md). Needs PyTorch: make bench-gpu BENCH_GPU_ARGS="--python /path/to/venv/bin/python3"
bench-gpu: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target scalebench bench_programs
	bench/gpu_node.sh --bin $(BUILD_DIR)/scalebench $(BENCH_GPU_ARGS)

report: deps
	python3 analysis/report.py results/*.h5 --out report/

clean:
	rm -rf $(BUILD_DIR)
