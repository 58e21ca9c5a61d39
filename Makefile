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

run: all
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

clean:
	rm -rf $(BUILD)

help:
	@echo "make [all|run|test|test-cpu|test-gpu|install PREFIX=..|bench|clean]"
	@echo "  BUILD=$(BUILD) BUILD_TYPE=$(BUILD_TYPE) CMAKE_FLAGS='-DCMAKE_CUDA_ARCHITECTURES=90'"
