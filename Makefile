# Two commands for a newcomer: `make demo` and `make test`. Both create .venv and install first.
VENV   ?= .venv
PYTHON ?= python3
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
DEMO_STORE := .retrieval_kernel/workshop
DEMO_QUESTION := Can a retrieved passage authorize deployment?

.PHONY: setup demo test lint lab bench scifact recovery clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	mkdir -p $(VENV)/share/jupyter/lab/settings
	cp extension/lab/overrides.json $(VENV)/share/jupyter/lab/settings/overrides.json
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/retrieval-kernel index fixtures/workshop/notes --store $(DEMO_STORE)
	$(BIN)/retrieval-kernel eval fixtures/workshop --output $(DEMO_STORE)-receipt.json
	$(BIN)/ipython --no-banner --colors=NoColor --ext=retrieval_kernel \
		-c '%context --notes fixtures/workshop/notes --store $(DEMO_STORE) --as-of 2026-10-15 --max-bytes 4000 $(DEMO_QUESTION)'
	$(BIN)/retrieval-kernel eval fixtures/policy --output $(DEMO_STORE)-policy-receipt.json
	$(BIN)/retrieval-kernel query "Can I refund order 4471?" --notes fixtures/policy/notes \
		--store $(DEMO_STORE)-policy --as-of 2026-11-30 --intent verify --format text

lint: setup
	$(BIN)/ruff check retrieval_kernel tests scripts
	$(BIN)/mypy

test: lint
	$(BIN)/pytest tests notebooks --nbval --nbval-sanitize-with notebooks/sanitize.cfg

bench: setup
	mkdir -p .retrieval_kernel
	$(BIN)/retrieval-kernel bench --passages 1000,10000 --output .retrieval_kernel/bench.json

recovery: setup
	$(BIN)/retrieval-kernel eval-recovery --output docs/recovery-receipt.json

scifact: setup
	mkdir -p .retrieval_kernel
	$(BIN)/retrieval-kernel beir ../shared/datasets/scifact --split test --output .retrieval_kernel/scifact-run.json

lab: setup
	IPYTHONDIR=$(CURDIR)/extension/ipython $(BIN)/jupyter lab --notebook-dir=notebooks

clean:
	rm -rf .retrieval_kernel .pytest_cache .mypy_cache .ruff_cache
