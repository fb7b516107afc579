# Entry points. Each target runs what it needs first, so on a fresh Debian
# machine `make demo` and `make test` work directly (as root, or with sudo).

CARGO ?= cargo

.PHONY: all setup build lint test test-core test-dpdk test-releases demo soak bench clean install uninstall \
	deb loom-deep test-valgrind

all: build

# Debian packages, hugepages (or the --no-huge fallback) -> build/eal-mem.env
setup:
	bash scripts/setup.sh

build: setup
	$(CARGO) build --release --workspace

# The tests' own builds (Cargo.toml: release without LTO); what the DPDK
# applications in the tests load is `make build`'s target/release.
TEST_PROFILE = --profile release-test

# Every test: the lints, the DPDK-free core once, then the DPDK-facing suite
# against this machine's DPDK. `make test-releases` runs the DPDK-facing
# suite against the other LTS releases too.
test: build lint test-core test-dpdk

# The code as the workspace's lints and rustfmt want it, and its docs
# without a broken or private link: each a failure, not a warning. Their
# own target directories, so that no build of the tests or of the
# handler is redone (a cold run: about two minutes).
lint: setup
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --target-dir target/clippy -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps --workspace --target-dir target/doc-check

# The DPDK-free core (ring, caches, accounting): unit and stress tests, the
# loom models, Miri, the shutdown tests under valgrind. Nothing here links
# DPDK, so it runs once whatever the release.
# The ring's unit and stress tests run a second time compiled for this CPU
# (-C target-cpu=native: AVX code around the ring's asm blocks). The loom
# models keep the release profile: without LTO they ran 112 s against
# 80-89 s, which takes back what the faster build saves (54 s against
# 60-75 s).
test-core: build
	$(CARGO) test $(TEST_PROFILE) -p mempool
	RUSTFLAGS="-C target-cpu=native" $(CARGO) test $(TEST_PROFILE) -p mempool --target-dir target/native \
		--lib --test stress_asm
	RUSTFLAGS="--cfg loom" $(CARGO) test --release -p mempool --target-dir target/loom \
		--test loom_ptr_ring --test loom_ring_room --test loom_pool --test loom_takeover
	CARGO=$(CARGO) bash mempool/scripts/miri.sh
	bash mempool/scripts/valgrind.sh

# Everything that runs against DPDK: the bindings' and the handler's EAL
# tests, DPDK's own autotests, real PMDs, multi-process, port shutdown, the
# soak, install and the Debian package. Cargo tests that skip themselves
# (`test: SKIP`, logged to build/cargo-skips.log) are reported and counted
# by scripts/test-dpdk.sh, as skipped or failed by its rules.
#
# In a release root (DPDK_ROOT_SUITE set by scripts/dpdk-root.sh) the checks
# that do not depend on the DPDK release are left out, as they ran on the
# host: the bench's report tests, the kill test of the core's lock takeover
# and the valgrind soak of the release protocol.
ROOT_EXCLUDE = $(if $(DPDK_ROOT_SUITE),--exclude bench)
test-dpdk: build
	rm -f build/cargo-skips.log
	PTR_RING_SKIP_LOG=$(CURDIR)/build/cargo-skips.log $(CARGO) test $(TEST_PROFILE) --workspace \
		--exclude mempool $(ROOT_EXCLUDE)
	TEST_DPDK_SKIP_CARGO=1 TEST_DPDK_CARGO_SKIPS=build/cargo-skips.log bash scripts/test-dpdk.sh
	bash scripts/test-pmds.sh
	$(CARGO) build $(TEST_PROFILE) -p pmd-glue-so --no-default-features --features test-hooks
	bash scripts/test-multiprocess.sh
	$(if $(DPDK_ROOT_SUITE),@echo "test-kill: left out in the $(DPDK_ROOT_SUITE) root (ran on the host)",bash scripts/test-kill.sh)
	./target/release/port_shutdown
	./target/release/port_shutdown --cache 256
	bash scripts/soak.sh 10
	bash scripts/test-install.sh
	bash scripts/test-deb.sh

# The DPDK-facing suite (make test-dpdk) in a Debian root of each other LTS
# release that Debian ships (scripts/dpdk-root.sh: trixie has DPDK 24.11,
# forky 25.11), made on first use. Runs every root, then fails if one did.
RELEASE_ROOTS ?= trixie forky
test-releases:
	@failed=""; for r in $(RELEASE_ROOTS); do \
		echo "== make test-dpdk in the $$r root"; \
		bash scripts/dpdk-root.sh $$r $(MAKE) test-dpdk || failed="$$failed $$r"; \
	done; \
	if [ -n "$$failed" ]; then echo "test-releases: failed in:$$failed"; exit 1; fi; \
	echo "test-releases: passed in $(RELEASE_ROOTS)"

# Into EAL's plugin directory (every DPDK application on the host loads it),
# header and pkg-config file next to DPDK's; PREFIX (/usr) and DESTDIR apply.
# Build first (`make build`); `bash scripts/install.sh --help`.
PREFIX ?= /usr
install:
	PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" bash scripts/install.sh install

uninstall:
	PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" bash scripts/install.sh uninstall

# The ring's loom models at a deeper preemption bound (make test runs 3);
# minutes to hours, not part of make test.
loom-deep:
	RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=$(or $(LOOM_BOUND),5) $(CARGO) test --release \
		-p mempool --target-dir target/loom --test loom_ptr_ring

# The shutdown tests (late returns racing a pool that frees itself at
# release) under valgrind; skipped when valgrind is missing.
test-valgrind:
	bash mempool/scripts/valgrind.sh

# Mempool API and end-to-end benchmarks against ring_mp_mc -> bench/RESULTS.md
bench: build
	bash bench/run.sh

# The full soak: testpmd port stop/start under traffic for SOAK_SECONDS (60).
soak: build
	bash scripts/soak.sh $(or $(SOAK_SECONDS),60)

demo: build
	bash scripts/demo.sh

# A Debian package of the handler for this machine's DPDK -> build/deb/
deb: build
	bash scripts/deb.sh

clean:
	$(CARGO) clean
	rm -rf build
