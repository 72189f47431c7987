# tandem: the two commands a newcomer needs are `make run` and `make test` (see README.md).
# Both install what is missing (scripts/setup.sh), build, and run.

BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
JOBS       ?= $(shell nproc)
CMAKE_GEN  := -G Ninja
CTEST      := ctest --output-on-failure --timeout 900

.PHONY: all deps build run test test-release test-asan test-tsan rtl-area clean help

all: build

help:
	@echo "make run       build and run the demo on the embedded default fabric (the main job)"
	@echo "make test      build and run every test: release, ASan+UBSan, TSan (concurrency tests)"
	@echo "make build     build everything into $(BUILD)/ without running anything"
	@echo "make rtl-area  synthesize the RTL accelerators with Yosys and write docs/results/rtl_area.md"
	@echo "make clean     remove the build folders"

deps:
	@./scripts/setup.sh

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

run: build
	@./$(BUILD)/tandem demo

test: test-release test-asan test-tsan
	@echo "make test: all test builds passed"

test-release: build
	@echo "== release build: every test"
	@cd $(BUILD) && $(CTEST)

# ASan+UBSan over everything.
test-asan: deps
	@echo "== ASan+UBSan build: every test"
	@cmake -S . -B $(ASAN_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_SANITIZE=address >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 $(CTEST)

# TSan over the concurrency tests (label `concurrency`).
test-tsan: deps
	@echo "== TSan build: concurrency tests"
	@cmake -S . -B $(TSAN_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_SANITIZE=thread >/dev/null
	@cmake --build $(TSAN_BUILD) -j$(JOBS) --target tandem_concurrency_tests
	@cd $(TSAN_BUILD) && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 $(CTEST) -L concurrency

rtl-area: deps
	@./scripts/rtl_area.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
