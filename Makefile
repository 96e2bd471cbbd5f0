# ferrospark: `make demo` and `make test` are all a newcomer needs (see README.md).

VENV   ?= .venv
PY     := $(VENV)/bin/python
SCALE  ?= 1
PYTEST_ARGS ?=
# pytest-xdist: two worker processes (each with its own Spark session; CI has two cores), whole
# files to one worker so a file's module fixtures are built once, in collection order (longest
# files first, tests/conftest.py), not xdist's most-tests-first. `make test PYTEST_XDIST=`
# runs serially.
PYTEST_XDIST ?= -n 2 --dist loadfile --no-loadscope-reorder

# Spark's Python workers must run the interpreter ferrospark is installed in.
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))
export VIRTUAL_ENV := $(abspath $(VENV))

.PHONY: all venv build build-release demo test test-rust test-python conformance bench bench-rust lint fmt clean

all: test

$(VENV)/.installed: requirements-dev.txt
	@command -v cargo >/dev/null || { echo "cargo not found: install Rust (https://rustup.rs)"; exit 1; }
	@command -v java >/dev/null || { echo "java not found: PySpark 4 needs Java 17 (apt-get install openjdk-17-jre-headless)"; exit 1; }
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

# The extension the tests and the stub check import: Cargo's `ci` profile, release's
# optimizations without link-time optimization (Cargo.toml), which answers the same and builds
# minutes sooner on two cores. The demo and the benchmarks build `release`.
TEST_PROFILE ?= ci

build: venv
	$(VENV)/bin/maturin develop --profile $(TEST_PROFILE) --quiet

build-release: venv
	$(VENV)/bin/maturin develop --release --quiet

demo: build-release
	$(PY) -m ferrospark.demo --scale $(SCALE)

test-rust:
	cargo test --workspace --quiet

test-python: build
	$(PY) -m pytest -q $(PYTEST_XDIST) $(PYTEST_ARGS)

test: test-rust test-python

# Spark's SQL golden tests (../shared/conformance/spark-sql-tests): the per-file table and totals.
# `make test` runs them as a ratchet (tests/test_conformance.py); UPDATE=1 grows the list of passes.
conformance: build
	$(PY) tests/conformance/runner.py $(if $(UPDATE),--update,)

bench: build-release
	$(PY) benches/compare.py --workload scan+filter --scale $(SCALE)

bench-rust:
	cargo bench -p ferrospark-scan

# Style and static checks; the stub check imports the built extension, so it needs `build`.
lint: build
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --quiet -- -D warnings
	$(VENV)/bin/ruff check python tests benches
	$(VENV)/bin/ruff format --check python tests benches
	$(PY) tests/check_stubs.py

fmt: venv
	cargo fmt --all
	$(VENV)/bin/ruff format python tests benches
	$(VENV)/bin/ruff check --fix python tests benches

clean:
	cargo clean
	rm -rf $(VENV) .pytest_cache
