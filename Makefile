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

.PHONY: all deps build check demo bench install clean

all: build

deps:
	@scripts/install-deps --check >/dev/null 2>&1 || scripts/install-deps

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

check: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

demo: build
	@KEEP=$(KEEP) bash examples/shakesapp/demo.sh $(BUILD)

bench: build
	bench/run.sh $(BUILD)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf build build-asan
