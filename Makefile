# Entry points: `make train` runs Rota's main job, `make test` runs the whole test suite.
# Both install missing Debian packages (as root), configure and build first.

BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_JOBS  ?= 1
JOBS       ?= $(shell nproc)
# What `make train` needs: the compiler, the build tools and the libraries the `rota` binary
# links. ccache makes every later build of the same sources (another build directory, another
# clone, CI) a cache hit (docs/testing.md "Build time").
TRAIN_PACKAGES := g++ cmake ninja-build pkg-config ccache libdnnl-dev libprotobuf-dev protobuf-compiler \
              libfmt-dev nlohmann-json3-dev libcli11-dev libsentencepiece-dev \
              libcurl4-openssl-dev libssl-dev libpcre2-dev libicu-dev
# What `make test` adds: GoogleTest and Google Benchmark, Open MPI for data-parallel runs,
# Python with numpy and PyTorch for the references and the rota Python module, rsvg-convert for
# the ablation reports' PNG plots, and the mold linker for the many test executables.
TEST_PACKAGES := libgtest-dev libgmock-dev libbenchmark-dev \
              python3-numpy libopenmpi-dev openmpi-bin \
              python3-dev pybind11-dev python3-venv python3-setuptools python3-wheel python3-torch \
              librsvg2-bin mold
PACKAGES   := $(TRAIN_PACKAGES) $(TEST_PACKAGES)

# `make fuzz` also needs clang with libFuzzer and its OpenMP runtime.
FUZZ_PACKAGES := clang-14 libclang-rt-14-dev libomp-14-dev

.PHONY: deps deps-train install-missing peers configure build train test test-asan fuzz bench format clean

# Every phase (packages, configure, build, tests) is timed into $$ROTA_PHASE_LOG when it is set;
# .ci/run prints the table (docs/testing.md "CI's budget").
TIMED := $(CURDIR)/tools/ci/timed.sh

# Installs only what is missing (of $(1)), so a machine that has everything does not touch apt.
define install_missing
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi
endef

deps-train:
	@$(TIMED) "packages" $(MAKE) --no-print-directory install-missing PKGS="$(TRAIN_PACKAGES)"

deps:
	@$(TIMED) "packages" $(MAKE) --no-print-directory install-missing PKGS="$(PACKAGES)"

install-missing:
	$(call install_missing,$(PKGS))

# `make train` configures without asking for the tests (ROTA_BUILD_TESTS and ROTA_BUILD_BENCH are
# AUTO: on when GoogleTest or Google Benchmark is installed) and builds only the `rota` program.
train: deps-train
	@$(TIMED) "release: configure" cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
	$(TIMED) "release: build rota" cmake --build $(BUILD) --target rota -j $(JOBS)
	./$(BUILD)/rota train recipes/default.txtpb --resume $(TRAIN_ARGS)

# The PyPI peers and references (torch 2.x, transformers, tokenizers, safetensors,
# flash-linear-attention; tools/peers/requirements.txt) in a virtual environment cached outside
# the repository (tools/peers/README.md): created once per machine (about 1.5 min and 5.6 GB),
# then reused by every clone; the tests of tests/peers run with its python.
peers: deps
	@$(TIMED) "peers: venv" tools/peers/venv.sh > /dev/null

configure: deps peers
	@$(TIMED) "release: configure" cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DROTA_BUILD_TESTS=ON \
	  -DROTA_BUILD_BENCH=ON -DROTA_PEERS_PYTHON=$$(tools/peers/venv.sh --path)/bin/python > /dev/null

build: configure
	$(TIMED) "release: build" cmake --build $(BUILD) -j $(JOBS)

# Idle OpenMP threads sleep instead of spinning: tests run side by side (ctest -j) and a
# spinning pool on a busy 2-core machine slows small-op tests down by an order of magnitude.
TEST_ENV := OMP_WAIT_POLICY=passive

test: build
	cd $(BUILD) && $(TEST_ENV) $(TIMED) "release: tests" ctest --output-on-failure -j $(JOBS)

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer (no benchmarks), built
# without MPI: Open MPI's own allocations would show up as leaks, and CI thereby also checks that
# a build without MPI trains as one process. -O1 (ASan's advice) with line tables (-g1, what a
# report's file:line needs): at -O0 the kernels under test ran many times slower. Each test
# executable runs as a few gtest shards, not one process per case (ROTA_TEST_PROCESS=SHARDS in
# tests/CMakeLists.txt). ASAN_SKIP (gtest patterns): the longest runs of code that shorter tests
# already take through the sanitizers (whole-corpus tokenizer goldens, long-sequence stability,
# memory measurements, full-split evaluations and central differences over whole windows); and
# the AVX2-capped rerun of the backend tests (on a CPU without AVX-512 it repeats the main run
# exactly, elsewhere it is the same kernel source built for AVX2; the portable rerun stays). They
# all run in `make test`. docs/testing.md "What the sanitized run covers" gives the reasons.
ASAN_SKIP := *HuggingFaceGolden.WholeCorpora*:*EvalStride.SlidingWindowsScoreTheSameTokens*:*EvalData.AFileHoldingASplitScoresExactlyAsThatSplit*:*SegmentedLoss.MemoryFollowsTheSegmentNotTheSequence*:*ContinuedLoss.GradientsStopAtTheWindowsStart*:*LongSequenceFloatStability*:*GatedFloatStability.LongSequence*
ASAN_SKIP_CTEST := ^backend_dispatch_avx2$$

test-asan: deps
	@$(TIMED) "asan: configure" cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" -DROTA_SANITIZE=address,undefined -DROTA_BUILD_TESTS=ON \
	  -DROTA_BUILD_BENCH=OFF -DROTA_WITH_MPI=OFF -DROTA_TEST_PROCESS=SHARDS > /dev/null
	$(TIMED) "asan: build" cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && $(TEST_ENV) ASAN_OPTIONS=detect_leaks=1 GTEST_FILTER='-$(ASAN_SKIP)' \
	  $(TIMED) "asan: tests" ctest --output-on-failure -j $(JOBS) -LE slow -E '$(ASAN_SKIP_CTEST)'

# libFuzzer targets (fuzz/, docs/testing.md "Fuzzing"), built with clang, ASan and UBSan, each
# run for FUZZ_SECONDS from its seed corpus; fails on any crash, leak, timeout or OOM.
fuzz:
	@$(TIMED) "fuzz: packages" $(MAKE) --no-print-directory install-missing PKGS="$(PACKAGES) $(FUZZ_PACKAGES)"
	@CC=clang-14 CXX=clang++-14 $(TIMED) "fuzz: configure" cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" -DROTA_FUZZ=ON \
	  -DROTA_BUILD_TESTS=OFF -DROTA_BUILD_BENCH=OFF -DROTA_BUILD_PYTHON=OFF -DROTA_WITH_MPI=OFF > /dev/null
	$(TIMED) "fuzz: build" cmake --build $(FUZZ_BUILD) --target rota_fuzzers -j $(JOBS)
	FUZZ_JOBS=$(FUZZ_JOBS) $(TIMED) "fuzz: run" fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

bench: build
	@for b in $(BUILD)/bench/*_bench; do echo "== $$b"; OMP_NUM_THREADS=$(JOBS) $$b; done

format:
	@git ls-files '*.h' '*.cpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
