# docscraper: `make crawl SOURCE=<url>` and `make test` create .venv when needed, then run.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SOURCE ?=
ARGS ?=
PYTEST_ARGS ?=
# Two test processes (pytest-xdist), a test file each: most tests wait on a crawl subprocess or a server.
PYTEST_XDIST ?= -n 2 --dist loadfile
# Nothing is ever fetched from a model hub: the embedding model ships in a package.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export ANONYMIZED_TELEMETRY := False

.PHONY: help venv crawl demo test lint typecheck bench clean

help:
	@echo "make crawl SOURCE=https://docs.example.com/ [ARGS='-a max_pages=100']  crawl a site"
	@echo "make demo                                                              crawl the bundled example site, offline"
	@echo "make test                                                              run the test suite (needs /usr/bin/chromium: apt-get install -y chromium)"
	@echo "make lint typecheck bench clean"

$(BIN)/.installed: requirements.txt requirements-dev.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@touch $@

# Each make command also compiles the project's own modules to bytecode when they changed (a no-op
# otherwise): every scrapy command imports them, and where PYTHONDONTWRITEBYTECODE is set Python would
# compile them again in each process (0.2 s of a one-shot `scrapy search`). pip compiled the packages.
venv: $(BIN)/.installed
	@$(BIN)/python -m compileall -q docscraper pipelines settings

crawl: venv
	@test -n "$(SOURCE)" || { echo "usage: make crawl SOURCE=https://docs.example.com/ [ARGS='-a max_pages=100']"; exit 2; }
	$(BIN)/scrapy crawl docs -a source="$(SOURCE)" $(ARGS)

demo: venv
	$(BIN)/python scripts/demo.py $(ARGS)

# The rendering tests need Debian's Chromium at /usr/bin/chromium (apt-get install -y chromium; .ci/run
# installs it); without it they fail with that hint.
test: venv
	@scripts/system-deps.sh
	$(BIN)/python -m pytest $(PYTEST_XDIST) $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-logo --no-cache

typecheck: venv
	$(BIN)/mypy docscraper pipelines settings

bench: venv
	$(BIN)/python benchmarks/crawl_benchmark.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist *.egg-info
