# Entry points: `make train` runs Rota's main job, `make test` runs the whole test suite.
# Both install missing Debian packages (as root), configure and build first.

BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
JOBS       ?= $(shell nproc)
PACKAGES   := g++ cmake ninja-build pkg-config libdnnl-dev libprotobuf-dev protobuf-compiler \
              libfmt-dev nlohmann-json3-dev libcli11-dev libsentencepiece-dev \
              libgtest-dev libgmock-dev libbenchmark-dev libcurl4-openssl-dev libssl-dev \
              python3-numpy libopenmpi-dev openmpi-bin libpcre2-dev libicu-dev \
              python3-dev pybind11-dev python3-venv python3-setuptools python3-wheel python3-torch \
              librsvg2-bin

# `make fuzz` also needs clang with libFuzzer and its OpenMP runtime.
FUZZ_PACKAGES := clang-14 libclang-rt-14-dev libomp-14-dev

.PHONY: deps configure build train test test-asan fuzz bench format clean

# Installs only what is missing, so a machine that has everything does not touch apt.
deps:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null

build: configure
	cmake --build $(BUILD) -j $(JOBS)

train: build
	./$(BUILD)/rota train recipes/default.txtpb --resume $(TRAIN_ARGS)

# Idle OpenMP threads sleep instead of spinning: tests run side by side (ctest -j) and a
# spinning pool on a busy 2-core machine slows small-op tests down by an order of magnitude.
TEST_ENV := OMP_WAIT_POLICY=passive

test: build
	cd $(BUILD) && $(TEST_ENV) ctest --output-on-failure -j $(JOBS)

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer (Debug, no benchmarks),
# built without MPI: Open MPI's own allocations would show up as leaks, and CI thereby also
# checks that a build without MPI trains as one process. ASAN_SKIP: the longest runs of code
# that shorter tests already take through the sanitizers (whole-corpus tokenizer goldens,
# long-sequence stability, memory measurements, full-split evaluations and central
# differences over whole windows); at -O0 under ASan they are a third of the suite's time on a
# 2-core machine. Also the AVX2-capped rerun of the backend tests: on a CPU without AVX-512 it
# repeats the main run exactly, and elsewhere it is the same kernel source built for AVX2 (the
# portable rerun stays). They run in `make test`. Debug info is line tables only (-g1): what a
# sanitizer report's file:line needs, ~11 % less compile time than full -g.
ASAN_SKIP := HuggingFaceGolden\.WholeCorpora|EvalStride\.SlidingWindowsScoreTheSameTokens|EvalData\.AFileHoldingASplitScoresExactlyAsThatSplit|SegmentedLoss\.MemoryFollowsTheSegmentNotTheSequence|ContinuedLoss\.GradientsStopAtTheWindowsStart|LongSequenceFloatStability|GatedFloatStability\.LongSequence|^backend_dispatch_avx2$$

test-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
	  -DROTA_SANITIZE=address,undefined -DROTA_BUILD_BENCH=OFF -DROTA_WITH_MPI=OFF > /dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && $(TEST_ENV) ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS) -LE slow \
	  -E '$(ASAN_SKIP)'

# libFuzzer targets (fuzz/, docs/testing.md "Fuzzing"), built with clang, ASan and UBSan, each
# run for FUZZ_SECONDS from its seed corpus; fails on any crash, leak, timeout or OOM.
fuzz:
	@$(MAKE) --no-print-directory deps PACKAGES="$(PACKAGES) $(FUZZ_PACKAGES)"
	@CC=clang-14 CXX=clang++-14 cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" -DROTA_FUZZ=ON \
	  -DROTA_BUILD_TESTS=OFF -DROTA_BUILD_BENCH=OFF -DROTA_BUILD_PYTHON=OFF -DROTA_WITH_MPI=OFF > /dev/null
	cmake --build $(FUZZ_BUILD) --target rota_fuzzers -j $(JOBS)
	fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

bench: build
	@for b in $(BUILD)/bench/*_bench; do echo "== $$b"; OMP_NUM_THREADS=$(JOBS) $$b; done

format:
	@git ls-files '*.h' '*.cpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
