# hotspur — convenience wrapper around CMake. `make` builds, `make check` runs
# every test under ctest, `make demo` runs the profile-fix-prove story
# (examples/shakesapp, docs/tutorial.md; KEEP=1 leaves its server running),
# `make bench` runs the benchmarks. SANITIZE=1 builds with ASan/UBSan in
# build-asan/.
BUILD ?= build
CMAKE_FLAGS ?=
ifeq ($(SANITIZE),1)
BUILD := build-asan
CMAKE_FLAGS += -DHS_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
endif
PREFIX ?= /usr/local
JOBS ?= $(shell nproc)

.PHONY: all deps build-deps build check demo bench install clean

all: build

# deps: everything the tests need (Debian packages, then npm ci in
# tests/node); build-deps: only what building the product needs, so a plain
# `make` never runs npm.
deps:
	@scripts/install-deps --check >/dev/null 2>&1 || scripts/install-deps

build-deps:
	@scripts/install-deps --build --check >/dev/null 2>&1 || scripts/install-deps --build

$(BUILD)/CMakeCache.txt: | build-deps
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS)

build: build-deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

check: deps build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# the set-up's output (packages, npm ci, the build) goes to a log, shown only
# if it fails: the story starts at once
demo:
	@mkdir -p $(BUILD) && $(MAKE) --no-print-directory deps build >$(BUILD)/demo-build.log 2>&1 || \
	  { cat $(BUILD)/demo-build.log; echo "make demo: the set-up failed (above)"; exit 1; }
	@KEEP=$(KEEP) bash examples/shakesapp/demo.sh $(BUILD)

bench: build
	bench/run.sh $(BUILD)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf build build-asan
