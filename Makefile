# Entry points. Each target runs what it needs first, so on a fresh Debian
# machine `make demo` and `make test` work directly (as root, or with sudo).

CARGO ?= cargo

.PHONY: all setup build test demo soak bench clean install uninstall loom-deep test-valgrind

all: build

# Debian packages, hugepages (or the --no-huge fallback) -> build/eal-mem.env
setup:
	bash scripts/setup.sh

build: setup
	$(CARGO) build --release --workspace

test: build
	$(CARGO) test --release --workspace
	RUSTFLAGS="--cfg loom" $(CARGO) test --release -p mempool --target-dir target/loom \
		--test loom_ptr_ring --test loom_ring_room --test loom_pool
	CARGO=$(CARGO) bash mempool/scripts/miri.sh
	TEST_DPDK_SKIP_CARGO=1 bash scripts/test-dpdk.sh
	bash scripts/test-pmds.sh
	bash scripts/test-multiprocess.sh
	./target/release/port_shutdown
	./target/release/port_shutdown --cache 256
	bash scripts/soak.sh 10
	bash scripts/test-install.sh
	bash mempool/scripts/valgrind.sh

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

clean:
	$(CARGO) clean
	rm -rf build
