# Two commands for a newcomer: `make demo` and `make test`. Both create .venv and install first.
VENV   ?= .venv
PYTHON ?= python3
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# The JupyterLab extension: TypeScript in extension/, built with npm (Node.js 20) and jupyter-builder into
# the Python package, which installs it prebuilt under share/jupyter/labextensions/.
LABEXT := retrieval_kernel/lab/labextensions/retrieval-kernel-lab/package.json
LABEXT_SOURCES := extension/package.json extension/tsconfig.json $(wildcard extension/src/*.ts extension/style/*.css extension/schema/*.json)
NODE_MODULES := extension/node_modules/.package-lock.json
DEMO_STORE := .retrieval_kernel/workshop
DEMO_QUESTION := Can a retrieved passage authorize deployment?

.PHONY: setup labextension demo test lint lab bench scifact recovery clean

# An editable install leaves out the wheel's data files (the prebuilt labextension and the config that
# enables the server extension): link and copy them where a wheel install puts them.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	mkdir -p $(VENV)/share/jupyter/lab/settings $(VENV)/share/jupyter/labextensions $(VENV)/etc/jupyter/jupyter_server_config.d
	cp extension/lab/overrides.json $(VENV)/share/jupyter/lab/settings/overrides.json
	ln -sfn $(CURDIR)/$(dir $(LABEXT)) $(VENV)/share/jupyter/labextensions/retrieval-kernel-lab
	cp extension/jupyter_server_config.d/retrieval_kernel.json $(VENV)/etc/jupyter/jupyter_server_config.d/
	touch $(STAMP)

setup: $(STAMP) $(LABEXT)

$(BIN)/jupyter-builder:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet "$$(grep -o 'jupyter-builder==[0-9.]*' pyproject.toml)"

$(NODE_MODULES): extension/package-lock.json
	cd extension && npm ci --no-audit --no-fund --loglevel=error

# Rebuilt only when a source changed (the venv links to the build, so no reinstall).
$(LABEXT): $(LABEXT_SOURCES) $(NODE_MODULES) | $(BIN)/jupyter-builder
	cd extension && PATH="$(abspath $(BIN)):$$PATH" npm run build
	touch $@

labextension: $(LABEXT)

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
	$(BIN)/retrieval-kernel bench --passages 10000,50000,100000 --output .retrieval_kernel/bench.json

recovery: setup
	$(BIN)/retrieval-kernel eval-recovery --output docs/recovery-receipt.json

scifact: setup
	mkdir -p .retrieval_kernel
	$(BIN)/retrieval-kernel beir ../shared/datasets/scifact --split test --output .retrieval_kernel/scifact-run.json

# The Context panel and the status bar ask the workshop notes (the notebooks' own corpora, outside the
# root under ../shared, open read-only from their citations).
lab: setup
	IPYTHONDIR=$(CURDIR)/extension/ipython $(BIN)/jupyter lab --notebook-dir=notebooks \
		--RetrievalKernel.notes_dir=$(CURDIR)/fixtures/workshop/notes --RetrievalKernel.as_of=2026-10-15 \
		--RetrievalKernel.store_dir=$(CURDIR)/$(DEMO_STORE)-lab \
		--RetrievalKernel.extra_notes_dirs=$(CURDIR)/fixtures --RetrievalKernel.extra_notes_dirs=$(CURDIR)/../shared

clean:
	rm -rf .retrieval_kernel .pytest_cache .mypy_cache .ruff_cache
