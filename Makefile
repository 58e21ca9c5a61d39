# Makefile -- a thin wrapper that drives CMake. The two commands a new user needs:
#   make run    build, then solve a shipped example with CG
#   make test   build, then run the test suite (CTest; gpu tests skip without a GPU)

BUILD       ?= build
PREFIX      ?= /usr/local
BUILD_TYPE  ?= Release
CMAKE_FLAGS ?=
JOBS        ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE       ?= cmake
CTEST       ?= ctest

.PHONY: all configure run test test-cpu test-gpu install clean bench examples help

all: configure
	$(CMAKE) --build $(BUILD) -j $(JOBS)

configure:
	@command -v $(CMAKE) >/dev/null || { echo "make: cmake is required (apt-get install cmake)"; exit 2; }
	@test -f $(BUILD)/CMakeCache.txt || $(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	    -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS)

# run builds what the example needs: solve and libspk.so (host code only), and the CUDA
# backend libspk_cuda.so when the build has one and nvidia-smi lists a GPU to run it on
run: configure
	@targets=solve; \
	if nvidia-smi -L >/dev/null 2>&1 && $(CMAKE) --build $(BUILD) --target help | grep -qw spk_cuda; then \
	  targets="solve spk_cuda"; fi; \
	echo "$(CMAKE) --build $(BUILD) -j $(JOBS) --target $$targets"; \
	$(CMAKE) --build $(BUILD) -j $(JOBS) --target $$targets
	$(BUILD)/solve -A inputs/bcsstk09.mtx --method cg --precond jacobi --rtol 1e-8

test: all
	cd $(BUILD) && $(CTEST) --output-on-failure -j $(JOBS)

test-cpu: all
	cd $(BUILD) && $(CTEST) --output-on-failure -j $(JOBS) -L cpu

test-gpu: all
	cd $(BUILD) && $(CTEST) --output-on-failure -L gpu

install: all
	$(CMAKE) --install $(BUILD) --prefix $(PREFIX)

bench: all
	bash bench/run.sh $(BUILD)

# examples/heat.c (a P1 finite-element heat equation on libspk), built as $(BUILD)/heat
examples: configure
	$(CMAKE) --build $(BUILD) --target heat -j $(JOBS)

clean:
	rm -rf $(BUILD)

help:
	@echo "make [all|run|test|test-cpu|test-gpu|install PREFIX=..|bench|examples|clean]"
	@echo "  BUILD=$(BUILD) BUILD_TYPE=$(BUILD_TYPE) CMAKE_FLAGS='-DCMAKE_CUDA_ARCHITECTURES=90'"

# ---- robustness ---------------------------------------------------------------------------
#   make test-asan   the cpu suite under AddressSanitizer + UBSan (LeakSanitizer included), in
#                    its own CPU-only build dir
#   make fuzz        the Matrix Market fuzzer for FUZZ_TIME seconds (default 60; needs clang);
#                    FUZZ_MAX_DIM: the largest dimension it assembles (default 2^20; 2147483648
#                    assembles every parsed matrix, leaving the refusals to the library's own
#                    memory check), FUZZ_MEMORY: the context's memory budget in bytes (1e8:
#                    the largest matrix it lets through is assembled within -timeout=10)
#   make fuzz-long   the same for 10 minutes
ASAN_BUILD  ?= build-asan
FUZZ_BUILD  ?= build-fuzz
FUZZ_TIME   ?= 60
FUZZ_MAX_DIM ?= 1048576
FUZZ_MEMORY ?= 1e8
SAN_ENV     := ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1 \
               UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.PHONY: test-asan fuzz fuzz-long fuzz-build

test-asan:
	@test -f $(ASAN_BUILD)/CMakeCache.txt || $(CMAKE) -S . -B $(ASAN_BUILD) -DSPK_SANITIZE=ON \
	    -DCMAKE_BUILD_TYPE=Debug -DSPK_BUILD_BENCH=OFF
	$(CMAKE) --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && $(SAN_ENV) $(CTEST) --output-on-failure -j $(JOBS) -L cpu

fuzz-build:
	@command -v clang >/dev/null || { echo "make: the fuzzer needs clang (apt-get install clang libclang-rt-14-dev)"; exit 2; }
	@test -f $(FUZZ_BUILD)/CMakeCache.txt || $(CMAKE) -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang \
	    -DSPK_FUZZ=ON -DSPK_ENABLE_CUDA=OFF -DSPK_BUILD_TESTS=OFF -DSPK_BUILD_BENCH=OFF \
	    -DCMAKE_BUILD_TYPE=RelWithDebInfo
	$(CMAKE) --build $(FUZZ_BUILD) --target fuzz_mmio -j $(JOBS)

# Seeds: fuzz/corpus/ (every case of tests/test_mmio.c) and the inputs/ files under 16 KiB.
# New corpus entries go to $(FUZZ_BUILD)/corpus, crashes to fuzz/crashes/ (commit them: the
# fuzz_corpus test replays that folder). -rss_limit_mb: the fuzz target's context may commit
# FUZZ_MEMORY bytes (the library refuses more before allocating), so 2 GB is generous.
fuzz: fuzz-build
	@mkdir -p $(FUZZ_BUILD)/corpus $(FUZZ_BUILD)/seeds fuzz/crashes
	@find inputs -name '*.mtx' -size -16k -exec cp {} $(FUZZ_BUILD)/seeds/ \;
	$(SAN_ENV) SPK_FUZZ_MAX_DIM=$(FUZZ_MAX_DIM) SPK_FUZZ_MEMORY=$(FUZZ_MEMORY) \
	    $(FUZZ_BUILD)/fuzz_mmio -max_total_time=$(FUZZ_TIME) -max_len=16384 -timeout=10 \
	    -rss_limit_mb=2048 -dict=fuzz/mmio.dict -print_final_stats=1 -artifact_prefix=fuzz/crashes/ \
	    $(FUZZ_BUILD)/corpus fuzz/corpus $(FUZZ_BUILD)/seeds

fuzz-long:
	$(MAKE) fuzz FUZZ_TIME=600
