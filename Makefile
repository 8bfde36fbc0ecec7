# h5tile — the commands a newcomer runs are `make demo` and `make test`; both set up what is
# missing first (Debian packages, a local venv with CMake and h5py, HDF5 built once into .deps/).
#
#   make demo                 2-D heat-equation checkpoint/restart on 4 MPI ranks
#   make test                 every test: Rust unit tests, header freshness, C/C++ tests (ctest)
#                             against the installed package, h5py interop; the ctest suite runs
#                             again through the plugin driver twice (DRIVER_PASSES=0: once only)
#   make test-legate          h5tile.legate with Legate and cuPyNumeric on the CPUs (their own
#                             venv, about 2.5 GB of wheels, set up once)
#   make test-asan            the C, C++ and Fortran tests built with AddressSanitizer and UBSan
#   make test-valgrind        the core single-process C tests under valgrind memcheck
#   make test-rust-asan       every Rust test under AddressSanitizer (nightly; skips without it)
#   make test-scale           many ranks (16, 64, SCALE_RANKS=256): each collective step's time
#   make install PREFIX=dir   lib/libh5tile.so.0, include/h5tile.h, CMake config, pkg-config file,
#                             the plugin, bin/h5tile, the HDF5 built into .deps/ (lib/h5tile/hdf5),
#                             and the Python package (share/h5tile/python)
#   make header               regenerate include/h5tile.h after changing the C API
#   make bench                h5tile beside POSIX, h5py, Legate, Dask and Zarr: throughput, memory,
#                             tile count
#   make plugin-cross         each HDF5 line's plugin in the other line's HDF5 program
#   make gpu-build            compile the GPU check's programs (no GPU needed; see
#                             scripts/gpu-check.sh) and probe gds=on against the real cuFile
#   make fuzz                 the cargo-fuzz targets in fuzz/, FUZZ_SECONDS (60) each; needs a
#                             nightly toolchain and cargo-fuzz, and says it skips without them
#
# HDF5_VERSION=2.2.0 (default) or 1.14.5 picks the HDF5 line built into .deps/ (a link to its
# build in ~/.cache/h5tile, shared by the machine's clones; H5TILE_CACHE=off keeps it in the
# clone); HDF5_DIR=<prefix> uses an HDF5 >= 1.14 already installed instead.
# CTEST_JOBS (twice the cores) is how many tests ctest runs at once; FAULT_INJECTION_SCALE (1)
# scales the fault tests' random kills (docs/tests.md).
# MPI=openmpi (default) or mpich picks the MPI h5tile is built, installed and tested with (MPICH
# stands for its family: Intel MPI, Cray MPICH, MVAPICH); MPICC, MPICXX, MPIFC and MPIRUN name
# that MPI's compiler wrappers and launcher where they are not Debian's (e.g. MPICC=cc MPIRUN=srun).

HDF5_VERSION ?= 2.2.0
HDF5_DIR ?= $(CURDIR)/.deps/hdf5-$(HDF5_VERSION)
# Builds against different HDF5 installs are kept apart (hdf5-metno-sys is version-specific).
HDF5_TAG := $(if $(filter $(CURDIR)/.deps/hdf5-%,$(HDF5_DIR)),$(patsubst $(CURDIR)/.deps/hdf5-%,%,$(HDF5_DIR)),custom)
export HDF5_VERSION HDF5_DIR
ifeq ($(HDF5_TAG),custom)
# The Rust HDF5 bindings check HDF5_VERSION against the headers: let them read it from HDF5_DIR.
unexport HDF5_VERSION
endif

MPI ?= openmpi
ifeq ($(MPI),openmpi)
MPI_SUFFIX :=
MPI_NAME  := Open MPI
OTHER_MPI := mpich
else ifeq ($(MPI),mpich)
MPI_SUFFIX := -mpich
MPI_NAME  := MPICH
OTHER_MPI := openmpi
else
$(error MPI=$(MPI): h5tile is built with MPI=openmpi (the default) or MPI=mpich)
endif
# Debian names each MPI's wrappers with its suffix; elsewhere the plain names are tried.
mpi_tool   = $(firstword $(shell command -v $(1).$(2) $(1) 2>/dev/null) $(1).$(2))
MPICC     ?= $(call mpi_tool,mpicc,$(MPI))
MPICXX    ?= $(call mpi_tool,mpicxx,$(MPI))
MPIFC     ?= $(call mpi_tool,mpif90,$(MPI))
MPIRUN    ?= $(call mpi_tool,mpirun,$(MPI))
# rsmpi finds the MPI to link through this wrapper.
export MPICC

NPROC     := $(shell nproc)
VENV      := $(CURDIR)/.deps/venv
CMAKE     := $(VENV)/bin/cmake
CTEST     := $(VENV)/bin/ctest
PYTHON    := $(VENV)/bin/python
BUILD     := $(CURDIR)/build/hdf5-$(HDF5_TAG)$(MPI_SUFFIX)
STAGE     := $(BUILD)/prefix
PREFIX    ?= /usr/local
# Builds for each MPI are kept apart like those for each HDF5 line.
export CARGO_TARGET_DIR := $(CURDIR)/target/hdf5-$(HDF5_TAG)$(MPI_SUFFIX)
LIB       := $(CARGO_TARGET_DIR)/release/libh5tile.so
PLUGIN    := $(CARGO_TARGET_DIR)/release/libh5tile_gds.so
CLI       := $(CARGO_TARGET_DIR)/release/h5tile
# Open MPI refuses root and more ranks than cores unless told; harmless elsewhere.
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
export OMPI_MCA_rmaps_base_oversubscribe := 1

.PHONY: all setup build install stage header test test-legate test-rust test-c test-asan test-valgrind test-rust-asan test-scale fuzz demo bench plugin-cross gpu-build clean

all: build

setup:
	@./scripts/bootstrap.sh

build: setup
	cargo build --release --workspace

header: setup
	H5TILE_BLESS_HEADER=1 cargo test --release --lib header::

# A private install used by the C tests and the demo, exactly as a user would install.
stage: build
	@$(MAKE) --no-print-directory install PREFIX=$(STAGE) SKIP_BUILD=1

install: $(if $(SKIP_BUILD),,build)
	$(CMAKE) -S cmake -B $(BUILD)/install-$(notdir $(PREFIX)) -DCMAKE_INSTALL_PREFIX=$(PREFIX) \
	  -DH5TILE_LIBRARY=$(LIB) -DH5TILE_PLUGIN=$(PLUGIN) -DH5TILE_CLI=$(CLI) \
	  -DHDF5_DIR=$(HDF5_DIR) -DH5TILE_BUNDLE_HDF5=$(if $(filter custom,$(HDF5_TAG)),OFF,ON) \
	  -DH5TILE_MPI="$(MPI_NAME)" \
	  -DH5TILE_MPI_COMPILERS="$(MPICC);$(MPICXX);$(MPIFC)" \
	  -DH5TILE_VERSION=$$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1) >/dev/null
	$(CMAKE) --install $(BUILD)/install-$(notdir $(PREFIX))

test: test-rust test-c

# The C, C++, Fortran and Python tests configured against the staged install, in folder $(1),
# with extra CMake arguments $(2): the one place every test target configures them.
# H5Tile_HDF5_DIR: the HDF5 (with headers) the plugin tests' plain HDF5 programs build against;
# a bundled install carries only HDF5's libraries, so its package leaves it unset.
comma := ,
configure_c_tests = $(CMAKE) -S c-tests -B $(1) -DCMAKE_PREFIX_PATH=$(STAGE) \
	  -DH5Tile_HDF5_DIR=$(HDF5_DIR) \
	  -DPython3_EXECUTABLE=$(PYTHON) -DMPIEXEC_EXECUTABLE=$$(command -v $(MPIRUN)) \
	  -DMPICC_EXECUTABLE=$(MPICC) -DOTHER_MPICC=$(call mpi_tool,mpicc,$(OTHER_MPI)) \
	  "-DH5TILE_MAKE_VARS=MPI=$(MPI);HDF5_DIR=$(HDF5_DIR)$(if $(filter custom,$(HDF5_TAG)),,;HDF5_VERSION=$(HDF5_VERSION))" \
	  $(2) >/dev/null

test-rust: setup
	cargo fmt --all -- --check
	cargo clippy --release --workspace --all-targets -- -D warnings
	@# The library alone, without the tests' `internals` feature: code nothing uses is an error.
	cargo clippy --release -p h5tile -- -D warnings
	cargo test --release --workspace

# Left out of the driver passes of test-c: the plugin's own tests and the Python ones (they set
# up HDF5 themselves), the docs' examples, the set-up cache's test (no HDF5), the packaging
# tests (how a project finds and links h5tile), and the series and checkpoint fault groups
# (they test the commit protocol, not how bytes move: run once).
DRIVER_PASS_EXCLUDE := ^(plugin_|doc_examples$$|setup_cache$$|python_|cmake_package_portable$$|install_standalone$$|pkgconfig_build$$|cxx_consumer_|mpi_mismatch$$|fault_injection_(checkpoints|series|serieskills)_)

# DRIVER_PASSES=0 runs the suite once, without the two driver passes: how bytes move through the
# plugin does not depend on the MPI, so CI's MPICH run skips them (about 3 minutes).
DRIVER_PASSES ?= 1

# ctest runs CTEST_JOBS tests at once (each MPI test counts as its ranks): most of a test's
# time is spent waiting on launches and the disk, so twice the cores keeps them busy.
CTEST_JOBS ?= $(shell expr $(NPROC) \* 2)
CTEST_RUN := $(CTEST) --output-on-failure -j$(CTEST_JOBS)

test-c: stage
	$(call configure_c_tests,$(BUILD)/c-tests)
	$(CMAKE) --build $(BUILD)/c-tests -j$(NPROC)
	cd $(BUILD)/c-tests && $(CTEST_RUN)
ifneq ($(DRIVER_PASSES),0)
	@echo "--- the suite again, every file h5tile touches going through the h5tile_gds driver"
	cd $(BUILD)/c-tests && HDF5_PLUGIN_PATH=$(STAGE)/lib/h5tile/plugins HDF5_DRIVER=h5tile_gds \
	  $(CTEST_RUN) -E '$(DRIVER_PASS_EXCLUDE)'
	@echo "--- and once more with O_DIRECT and parallel pieces (direct=on,threads=3)"
	cd $(BUILD)/c-tests && HDF5_PLUGIN_PATH=$(STAGE)/lib/h5tile/plugins HDF5_DRIVER=h5tile_gds \
	  HDF5_DRIVER_CONFIG=direct=on,threads=3,block=64KiB,bounce=128KiB $(CTEST_RUN) -E '$(DRIVER_PASS_EXCLUDE)'
else
	@echo "--- DRIVER_PASSES=0: the two h5tile_gds driver passes are skipped"
endif

# The C, C++ and Fortran tests with AddressSanitizer + UBSan (docs/sanitizers.md): the test
# programs are instrumented, libh5tile (Rust), MPI and HDF5 are not, though LeakSanitizer sees
# every allocation. Left out, as nothing instrumented runs in them:
#   python_*, h5py_check_interop*,     Python and h5py only (h5py_make_files still runs: a
#   plugin_h5py*                       fixture)
#   cli_installed                      the tool, uninstrumented, is Rust
#   setup_cache                        a shell script over the set-up cache (scripts/cache.sh)
#   pkgconfig_build, mpi_mismatch,     shell scripts building a fresh, uninstrumented program
#   install_standalone, cmake_package_portable, doc_examples
#   cxx_consumer_*                     a separate CMake project built by ctest --build-and-test
#   plugin_two_hdf5_*                  dlopens a second libhdf5 with RTLD_DEEPBIND, which ASan's
#                                      runtime refuses
#   fault_*                            Python preloading fault_shim (LD_PRELOAD) into the
#                                      programs: ASan's runtime must come first, and the shim's
#                                      interposed file calls would sit in front of ASan's
#   mpi_scale_np64, mpi_subfiles_np64  64 instrumented ranks on a small machine; their code paths
#                                      run instrumented in mpi_roundtrip, mpi_batches, mpi_errors
#                                      and mpi_subfiles_np3
ASAN_EXCLUDE := ^(setup_cache|python_.*|h5py_check_interop.*|cli_installed|plugin_h5py.*|plugin_two_hdf5_.*|pkgconfig_build|mpi_mismatch|install_standalone|cmake_package_portable|doc_examples|cxx_consumer_.*|fault_.*|mpi_scale_np64|mpi_subfiles_np64)$$
# A leak fails the test (Open MPI's own, kept until exit, are suppressed in lsan.supp); the slow
# unwinder follows MPI, HDF5 and Rust frames built without frame pointers, so a report names
# the real allocation site and suppressions match whole stacks; a report ends the process with
# an exit status (what mpirun and ctest pass on), not an abort and a core file.
ASAN_OPTS := detect_leaks=1:halt_on_error=1:abort_on_error=0:fast_unwind_on_malloc=0
ASAN_OPTS := $(ASAN_OPTS):detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1
ASAN_ENV  := ASAN_OPTIONS=$(ASAN_OPTS) LSAN_OPTIONS=suppressions=$(CURDIR)/c-tests/sanitizers/lsan.supp \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

test-asan: stage
	$(call configure_c_tests,$(BUILD)/c-tests-asan,-DH5TILE_SANITIZE=address$(comma)undefined)
	$(CMAKE) --build $(BUILD)/c-tests-asan -j$(NPROC)
	cd $(BUILD)/c-tests-asan && $(ASAN_ENV) $(CTEST_RUN) -E '$(ASAN_EXCLUDE)'

# The core single-process C tests under valgrind memcheck, on test-c's (uninstrumented) build:
# any memory error, or a definite leak, fails (suppressions, each explained, in valgrind.supp).
# Only definite leaks are shown: Rust's std keeps each thread's handle through a pointer into
# the block ("possibly lost" to valgrind) until the process ends.
VALGRIND_TESTS := api_roundtrip api_relocate api_missing_tile api_dataset_names api_no_mpi_init

test-valgrind: stage
	$(call configure_c_tests,$(BUILD)/c-tests)
	$(CMAKE) --build $(BUILD)/c-tests -j$(NPROC) --target $(VALGRIND_TESTS)
	@for t in $(VALGRIND_TESTS); do \
	  echo "--- valgrind: $$t"; \
	  valgrind --tool=memcheck --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite \
	    --show-leak-kinds=definite --track-origins=yes --quiet \
	    --suppressions=$(CURDIR)/c-tests/sanitizers/valgrind.supp \
	    $(BUILD)/c-tests/$$t $(BUILD)/c-tests/scratch/valgrind/$$t || exit 1; \
	done; echo "test-valgrind: $(words $(VALGRIND_TESTS)) tests, no memory errors or definite leaks"

# The Rust side's unsafe boundaries (C pointers made into slices, HDF5 handles, the driver's
# callbacks registered in-process, the background writer's lifetime extension) under
# AddressSanitizer + LeakSanitizer: every Rust test of the workspace, built with nightly's
# -Zsanitizer=address (libhdf5 and MPI are not instrumented), but the peak-memory test (ASan's
# quarantine keeps freed memory by design). Skips, saying so, without nightly.
test-rust-asan: setup
	@if ! cargo +nightly --version >/dev/null 2>&1; then \
	  echo "make test-rust-asan: skipped: it needs a nightly toolchain (rustup toolchain install nightly)"; \
	else \
	  CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/asan RUSTFLAGS=-Zsanitizer=address \
	    RUSTDOCFLAGS=-Zsanitizer=address ASAN_OPTIONS=detect_leaks=1 \
	    cargo +nightly test --release --target x86_64-unknown-linux-gnu --workspace --tests \
	    -- --skip streaming_512_mib; \
	fi

# Many ranks, small tiles: mpi_scale (c-tests/mpi_scale.c) on 16, 64 and SCALE_RANKS ranks,
# oversubscribed, each step's time (the slowest rank's, the fastest of SCALE_REPS runs), then a
# table of the growth between rank counts beside n log n's (c-tests/scale_table.py). It fails
# when a run fails, never on timing. mpirun keeps a few descriptors per rank open: the soft
# limit on open files is raised to the hard one first.
SCALE_RANKS ?= 256
SCALE_REPS ?= 3

test-scale: stage
	$(call configure_c_tests,$(BUILD)/c-tests)
	$(CMAKE) --build $(BUILD)/c-tests -j$(NPROC) --target mpi_scale
	@ulimit -n $$(ulimit -Hn) 2>/dev/null || true; out=$(BUILD)/scale; rm -rf $$out; mkdir -p $$out; \
	for n in $$(printf '%s\n' 16 64 $(SCALE_RANKS) | sort -n -u); do \
	  echo "--- mpi_scale on $$n ranks"; \
	  { $(MPIRUN) -n $$n $(BUILD)/c-tests/mpi_scale $$out/scratch-np$$n $(SCALE_REPS); \
	    echo $$? >$$out/np$$n.rc; } 2>&1 | tee $$out/np$$n.txt; \
	  test "$$(cat $$out/np$$n.rc)" = 0 && grep -q "^mpi_scale: OK on $$n ranks" $$out/np$$n.txt || \
	    { echo "test-scale: mpi_scale failed on $$n ranks"; exit 1; }; \
	  rm -rf $$out/scratch-np$$n; \
	done; echo "--- each step's time (s), and its growth beside n log n's"; \
	$(PYTHON) c-tests/scale_table.py $$out/np*.txt

demo: stage
	$(CMAKE) -S examples -B $(BUILD)/examples -DCMAKE_PREFIX_PATH=$(STAGE) >/dev/null
	$(CMAKE) --build $(BUILD)/examples
	rm -rf $(BUILD)/demo/heat-series $(BUILD)/demo/heat-series-serial
	$(MPIRUN) -n 4 $(BUILD)/examples/heat2d $(BUILD)/demo/heat-series
	@echo "--- the same program with no launcher (one process):"
	$(BUILD)/examples/heat2d $(BUILD)/demo/heat-series-serial

# Speed and memory beside the baselines, measured side by side in one run (bench/suite.py
# says what and the knobs; BENCH_SCALE=0 leaves out the many-rank section); prints ratios,
# writes target/bench/suite.json and suite.png. The fault shim counts the scale section's calls.
bench: stage
	$(CMAKE) -S bench -B $(BUILD)/bench -DCMAKE_PREFIX_PATH=$(STAGE) >/dev/null
	$(CMAKE) --build $(BUILD)/bench
	@# legate.io.hdf5, the python section's contender, in a venv of its own (left out if that fails).
	@case ",$$BENCH_SECTIONS," in ,, | *,python,*) scripts/legate-env.sh || \
	  echo "bench: setting up legate.io.hdf5 failed (scripts/legate-env.sh): it is left out";; esac
	@# Zarr, the dask section's contender, for the bench only: beside the venv, not in it.
	@case ",$$BENCH_SECTIONS," in ,, | *,dask,*) $(PYTHON) -c "import sys; sys.path.insert(0, '$(BUILD)/bench-zarr'); import zarr" \
	  2>/dev/null || $(VENV)/bin/pip install -q --disable-pip-version-check --no-deps --target $(BUILD)/bench-zarr \
	  zarr numcodecs donfig google-crc32c pyyaml packaging typing_extensions || \
	  echo "bench: installing Zarr failed: da.to_zarr is left out";; esac
	BENCH_ZARR_DIR=$(BUILD)/bench-zarr PYTHONPATH=$(STAGE)/share/h5tile/python $(PYTHON) bench/suite.py $(BUILD)/bench/bench_h5tile $$(command -v $(MPIRUN)) $(CURDIR)/target/bench \
	  $(BUILD)/bench/libfault_shim.so $(STAGE)/bin/h5tile

# Legate and cuPyNumeric through h5tile (python/tests/test_legate.py), in Legate's own venv
# (scripts/legate-env.sh: about 2.5 GB of wheels, cached like the HDF5 build), on the CPUs:
# where no CUDA driver is installed, the bench's no-device libcuda.so.1 stands in (Legate's
# wheels link the driver).
NO_DEVICE := $(BUILD)/no-device
test-legate: stage
	scripts/legate-env.sh
	@mkdir -p $(NO_DEVICE)
	cc -shared -fPIC -O2 -Wall -Wextra -Werror -o $(NO_DEVICE)/libcuda.so.1 \
	  bench/programs/no_device_libcuda.c -ldl
	scripts/test-legate.sh $(STAGE) $(NO_DEVICE)

# The plugin is one binary for every HDF5 >= 1.14: each line's plugin runs the ordinary HDF5
# program built against the other line (after `make test` for both lines).
plugin-cross:
	@for pair in 2.2.0:1.14.5 1.14.5:2.2.0; do \
	  plugin=$${pair%%:*}; host=$${pair##*:}; dir=$(CURDIR)/build/plugin-cross/$$plugin-in-$$host; \
	  prog=$(CURDIR)/build/hdf5-$$host/c-tests/plugin_hdf5_program; \
	  export HDF5_PLUGIN_PATH=$(CURDIR)/build/hdf5-$$plugin/prefix/lib/h5tile/plugins; \
	  rm -rf $$dir && mkdir -p $$dir && \
	  HDF5_DRIVER=h5tile_gds $$prog env $$dir && $$prog by-name $$dir threads=2 || exit 1; \
	  echo "plugin-cross: the HDF5 $$plugin plugin in an HDF5 $$host program: OK"; \
	done

# The GPU check cannot run without a GPU, but its programs must keep compiling: built here
# with nvcc from NVIDIA's PyPI wheels (into .deps/cuda), as they will be on a GPU machine.
gpu-build: stage
	HDF5_DIR=$(HDF5_DIR) STAGE=$(STAGE) bash scripts/gpu-check.sh --pack
	bash scripts/gpu-check.sh --build

# Coverage-guided fuzzing (docs/tests.md): each target of fuzz/ for FUZZ_SECONDS under
# libFuzzer with AddressSanitizer; an input running past 20 s counts as a hang. A finding is
# left in fuzz/artifacts/<target>/ and fails the run. The stable property pass over the same
# inputs is part of `make test` (tests/fuzz_*.rs, plugin/tests/config_fuzz.rs).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= config master

fuzz: setup
	@if ! cargo +nightly fuzz --version >/dev/null 2>&1; then \
	  echo "make fuzz: skipped: it needs a nightly toolchain and cargo-fuzz" \
	    "(rustup toolchain install nightly; cargo install cargo-fuzz)"; \
	else \
	  cd fuzz && for t in $(FUZZ_TARGETS); do \
	    echo "--- fuzz: $$t for $(FUZZ_SECONDS) s"; \
	    CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/fuzz LD_LIBRARY_PATH=$(HDF5_DIR)/lib$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH} \
	      cargo +nightly fuzz run $$t -- \
	      -max_total_time=$(FUZZ_SECONDS) -timeout=20 || exit 1; \
	  done; \
	fi

clean:
	rm -rf build target
