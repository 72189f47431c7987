# tandem: the two commands a newcomer needs are `make run` and `make test` (see README.md).
# Both install what is missing (scripts/setup.sh), build, and run.

BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 20
DURATION   ?= 3600
SEED       ?= 1
JOBS       ?= $(shell nproc)
# The release build's CUDA device: AUTO (built where nvcc is found), ON (a configure error without it:
# .ci/run, so that CI cannot pass without compiling the backend) or OFF.
# Only from make's command line: a CUDA variable in the environment (a toolkit's path) is not this.
ifneq ($(origin CUDA),command line)
  CUDA := AUTO
endif
ifeq ($(filter AUTO ON OFF,$(CUDA)),)
  $(error CUDA=$(CUDA): use CUDA=AUTO, ON or OFF)
endif
CMAKE_GEN  := -G Ninja
# The tests learn no cost figures into the home folder (the gtest binaries set this themselves), and run
# JOBS at a time (the chaos tier alone: RUN_SERIAL in tests/chaos).
CTEST      := TANDEM_LEARNED_DIR=off ctest -j$(JOBS) --output-on-failure --timeout 900 --no-tests=error

.PHONY: all deps setup build install run test test-fast test-release test-asan test-tsan test-fuzz test-chaos rtl-area clean help

all: build

help:
	@echo "make run       build and run the demo on the embedded default fabric (the main job)"
	@echo "make test      build and run every test: release, ASan+UBSan, TSan (stress tier), libFuzzer (briefly)"
	@echo "make test-fast build and run the unit tier only (the edit-compile loop; under a minute once built)"
	@echo "make test-release, test-asan, test-tsan, test-fuzz  one of make test's four builds and its tests"
	@echo "make build     build everything into $(BUILD)/ without running anything"
	@echo "               CUDA=ON|OFF|AUTO: the release build's CUDA device (default AUTO: where nvcc is found)"
	@echo "make setup     install what the project needs (Debian and PyPI packages, Ray, python/tandem_sim)"
	@echo "make test-chaos DURATION=s SEED=n  the chaos tier for as long as wanted (tandem chaos; default 1 h)"
	@echo "make rtl-area  synthesize the RTL accelerators with Yosys and write docs/results/rtl_area.md"
	@echo "make install   install into PREFIX (default /usr/local): headers, libtandem.so/.a, tandem, tandemd,"
	@echo "               the drop-in libraries, pkg-config and CMake package files (docs/install.md)"
	@echo "make clean     remove the build folders"

deps:
	@./scripts/setup.sh

# The same: installs the Debian and PyPI packages (Ray included) and python/tandem_sim.
setup: deps

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_BUILD_CUDA=$(CUDA) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

PREFIX ?= /usr/local
install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

run: build
	@./$(BUILD)/tandem demo

test: test-release test-asan test-tsan test-fuzz
	@echo "make test: all test builds passed"

# The unit tier alone, for the edit-compile loop: builds only what it needs (tandem_unit_tier in
# tests/CMakeLists.txt), then runs `ctest -L unit`.
test-fast: deps
	@cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_BUILD_CUDA=$(CUDA) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS) --target tandem_unit_tier
	@cd $(BUILD) && $(CTEST) -L unit

# Every tier, the chaos tier's time-bounded form included (about 80 s, run alone).
test-release: build
	@echo "== release build: every test"
	@cd $(BUILD) && $(CTEST)

# ASan+UBSan over everything but the chaos tier (a latency bound; the release build runs it).
test-asan: deps
	@echo "== ASan+UBSan build: every test but chaos"
	@cmake -S . -B $(ASAN_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_SANITIZE=address >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 $(CTEST) -LE chaos

# The TSan and fuzz builds run no test of the OpenCL or CUDA device: they leave both out (about 30 s of
# compile each on two cores). The release and ASan builds keep them.
NO_REAL_DEVICES := -DTANDEM_BUILD_OPENCL=OFF -DTANDEM_BUILD_CUDA=OFF

# TSan over the concurrency tests (the `stress` tier).
test-tsan: deps
	@echo "== TSan build: concurrency tests"
	@cmake -S . -B $(TSAN_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_SANITIZE=thread \
	  $(NO_REAL_DEVICES) >/dev/null
	@cmake --build $(TSAN_BUILD) -j$(JOBS) --target tandem_concurrency_tests
	@cd $(TSAN_BUILD) && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 $(CTEST) -L stress

# libFuzzer (clang) on packet validation and the control protocol, FUZZ_SECONDS each.
test-fuzz: deps
	@echo "== libFuzzer build: packet and control-message fuzzers, $(FUZZ_SECONDS) s each"
	@CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_FUZZ=ON \
	  -DTANDEM_FUZZ_SECONDS=$(FUZZ_SECONDS) -DTANDEM_SANITIZE=address -DTANDEM_BUILD_RTL=OFF \
	  -DTANDEM_BUILD_BENCH_PEERS=OFF $(NO_REAL_DEVICES) >/dev/null
	@cmake --build $(FUZZ_BUILD) -j$(JOBS) --target tandem_fuzz_packet tandem_fuzz_control tandem_fuzz_service
	@cd $(FUZZ_BUILD) && $(CTEST) -L fuzz

# The chaos tier for DURATION seconds (rounds of 10 s cycling through sw, hw, auto and alpha), replayable by SEED.
test-chaos: build
	@echo "== chaos tier: $(DURATION) s, seed $(SEED)"
	@./$(BUILD)/tandem chaos --duration $(DURATION) --seed $(SEED)

rtl-area: deps
	@./scripts/rtl_area.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)
