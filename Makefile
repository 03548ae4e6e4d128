# Mashov — the two commands of README.md, plus a few helpers.
#
#   make run     virtualenv, install, migrate, demo data, serve on 127.0.0.1:$(PORT)
#   make test    virtualenv, dev install, the whole suite (PostgreSQL + Redis when they answer)
#
# Both work on a fresh clone: the virtualenv is created on first use, and pip runs again
# only when a requirements file is newer than its stamp in .venv.

# Python 3.11 is what the project is pinned and tested on; python3 is the fallback.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
PYTEST_ARGS ?=
BENCH_ARGS ?=

.DEFAULT_GOAL := run
.PHONY: run test embeddings persian bench check types lint format clean

run: $(VENV)/.installed-runtime
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo
	@echo "Serving Mashov on http://127.0.0.1:$(PORT)/ (Ctrl-C stops it)"
	$(PY) manage.py runserver 127.0.0.1:$(PORT)

# check_services.py prints `export`/`unset` lines for the services that answer (and says on
# stderr what it chose); with MASHOV_REQUIRE_SERVICES=1 it fails instead of falling back.
# DJANGO_SETTINGS_MODULE is unset because pytest-django lets the environment override
# pytest.ini, and a leftover production value would point the suite at the wrong settings.
# `exec` makes pytest's exit status the recipe's.
test: $(VENV)/.installed-dev
	@services="$$($(PY) scripts/check_services.py)" && eval "$$services" && \
		unset DJANGO_SETTINGS_MODULE && \
		echo "$(PY) -m pytest $(PYTEST_ARGS)" && \
		exec $(PY) -m pytest $(PYTEST_ARGS)

# The optional sentence-embeddings stack (back-translation filter); CI installs it so that
# the real model is tested, `make test` runs those tests only where it is installed.
embeddings: $(VENV)/.installed-embeddings

# Hazm's tokenizer and stoplist for Persian projects (FarsTail's Tables 2 and 4); CI installs it,
# `make test` runs those tests only where it is installed.
persian: $(VENV)/.installed-persian

# Throughput and latency figures for README's performance section (not a test).
bench: $(VENV)/.installed-dev
	$(PY) bench/annotate.py $(BENCH_ARGS)

# Django's own consistency checks: system checks, and no model change without a migration.
check: $(VENV)/.installed-runtime
	$(PY) manage.py check
	$(PY) manage.py makemigrations --check --dry-run

# Static types of annotation/metrics, selectors and services with mypy and django-stubs, as
# configured in pyproject.toml's [tool.mypy] (tests/test_types.py runs the same check).
types: $(VENV)/.installed-dev
	$(PY) -m mypy

# Lint (pyflakes, import order, a few bug patterns) and the formatter's check, as CI runs them;
# `make format` rewrites the tree in the committed style (pyproject.toml [tool.ruff]).
lint: $(VENV)/.installed-dev
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: $(VENV)/.installed-dev
	$(PY) -m ruff check --fix --select I .
	$(PY) -m ruff format .

clean:
	rm -f db.sqlite3
	rm -rf staticfiles

# The venv is an order-only prerequisite (after |): its own timestamp changes whenever pip
# writes into it, and that must not trigger another install.
$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-runtime: requirements.txt | $(VENV)/bin/python
	@echo "Installing requirements.txt into $(VENV) (the first time takes a few minutes)"
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

# requirements-dev.txt includes requirements.txt, so a change to either reinstalls.
$(VENV)/.installed-dev: requirements.txt requirements-dev.txt | $(VENV)/bin/python
	@echo "Installing requirements-dev.txt into $(VENV) (the first time takes a few minutes)"
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

$(VENV)/.installed-embeddings: requirements.txt requirements-embeddings.txt | $(VENV)/bin/python
	@echo "Installing requirements-embeddings.txt into $(VENV) (PyTorch CPU build, about 1.4 GB)"
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt -r requirements-embeddings.txt
	touch $@

# --no-deps: hazm 0.10.0 declares numpy==1.24.3 against the project's numpy 2.2.6, so the file
# lists, pinned, every package hazm imports (requirements-persian.txt says why each works).
$(VENV)/.installed-persian: requirements.txt requirements-persian.txt | $(VENV)/bin/python
	@echo "Installing requirements-persian.txt into $(VENV) (Hazm, without its numpy pin)"
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -r requirements-persian.txt
	touch $@
