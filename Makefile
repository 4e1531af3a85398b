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

.PHONY: help venv crawl demo test lint typecheck bench docs lock clean

help:
	@echo "make crawl SOURCE=https://docs.example.com/ [ARGS='-a max_pages=100']  crawl a site"
	@echo "make demo                                                              crawl the bundled example site, offline"
	@echo "make test                                                              run the test suite (needs /usr/bin/chromium: apt-get install -y chromium)"
	@echo "make docs                                                              the documentation site: build/docs/html/index.html"
	@echo "make lint typecheck bench clean"
	@echo "make lock                                                              requirements*.txt from requirements*.in, with hashes"

# requirements*.txt pin every package with its hashes, so pip installs in hash-checking mode: a file whose hash
# is not in the lock is refused.
$(BIN)/.installed: requirements.txt requirements-dev.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements-dev.txt
	@touch $@

# The hashed locks from the human-edited inputs, with pip-tools in a venv of its own (never $(VENV)). Pins
# already in requirements*.txt are kept; LOCK_ARGS=--upgrade (or --upgrade-package NAME) moves them. The
# index and find-links options come from pip's configuration and are not written into the locks.
LOCK_VENV ?= build/pip-tools
PIP_COMPILE := CUSTOM_COMPILE_COMMAND="make lock" $(LOCK_VENV)/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras \
	--no-emit-index-url --no-emit-find-links $(LOCK_ARGS)
lock:
	@test -x $(LOCK_VENV)/bin/pip-compile || { $(PYTHON) -m venv $(LOCK_VENV) && \
		$(LOCK_VENV)/bin/python -m pip install --quiet pip==26.3 pip-tools==7.6.2; }
	$(PIP_COMPILE) --output-file=requirements.txt requirements.in
	$(PIP_COMPILE) --output-file=requirements-dev.txt requirements-dev.in
	$(PIP_COMPILE) --output-file=requirements-docs.txt requirements-docs.in

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

# The documentation site (docs/), strict: a warning is an error, every one is listed (--keep-going), and a
# reference that resolves to nothing is a warning (-n). Sphinx lives in a venv of its own (requirements-docs.in
# says why); docs/conf.py adds $(VENV)'s packages after Sphinx's, so autodoc imports the project as it runs, and
# the reference pages are generated from the code at each build (docs/_ext/reference.py).
DOCS_VENV ?= build/docs-venv
$(DOCS_VENV)/.installed: requirements-docs.txt
	@test -x $(DOCS_VENV)/bin/python || $(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements-docs.txt
	@touch $@

docs: venv $(DOCS_VENV)/.installed
	DOCSCRAPER_DOCS_VENV="$(VENV)" $(DOCS_VENV)/bin/sphinx-build -W --keep-going -n -q -b html docs build/docs/html
	@echo "make docs: build/docs/html/index.html"

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist *.egg-info
