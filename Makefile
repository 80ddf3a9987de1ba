# Curfew: `make run` serves the product on SQLite; `make test` runs every check.
# Both set up everything they need on a fresh machine (virtualenv, pinned deps).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
LOCAL := .local

.PHONY: run test lint typecheck pytest pytest-app pytest-client pytest-engine bench bench-sqlite fuzz soak capsule-soak clean serve screenshots docs clients

# client/pyproject.toml: the gateway client is installed from the checkout (-e ./client),
# so a change to its metadata or dependencies reinstalls it; and a change to the curfew
# script (copied into $(VENV)/bin, an editable install links only the packages).
$(VENV)/.base: requirements/base.txt client/pyproject.toml client/scripts/curfew
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements/base.txt
	touch $@

$(VENV)/.dev: $(VENV)/.base requirements/dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements/dev.txt
	touch $@

# A local secret key, made once and kept out of git.
$(LOCAL)/secret_key:
	mkdir -p $(LOCAL)
	$(PYTHON) -c "import secrets; print(secrets.token_urlsafe(50))" > $@
	chmod 600 $@

# Served by uvicorn, the server bin/serve runs in production (one server
# everywhere), reloading on code, template and client changes, through
# `manage.py runserver` (curfew_core/management/commands/runserver.py declares
# the server's flags, so Django's own habit serves the same product).
# tests/readme/test_make_run.py runs this target as written.
run: $(VENV)/.base $(LOCAL)/secret_key
	export SECRET_KEY="$$(cat $(LOCAL)/secret_key)" CURFEW_DEBUG=1 && \
	$(PY) manage.py migrate --no-input && \
	$(PY) manage.py curfew demo --user demo --token-file $(LOCAL)/demo_token && \
	exec $(PY) manage.py runserver $(HOST):$(PORT)

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-logo --no-cache  # layering contracts in .importlinter

typecheck: $(VENV)/.dev
	$(VENV)/bin/mypy curfew_core curfew_site client/src client/tests

# The suite runs in one process per core (pytest-xdist; PYTEST_WORKERS=0 runs
# it in one process). This is safe: each worker has its own test database
# (pytest-django's suffix) and its own Redis namespace (curfew_site/settings_test.py).
# --dist loadfile keeps each module on one worker (its servers start once) and
# hands the slow modules out first, the browser tests last (tests/conftest.py);
# pyproject.toml sets it. The engine's suite runs once, without Django.
# Timings and the long runs (make fuzz, make soak): docs/test-suite.md.
PYTEST_WORKERS ?= auto
# Runs of minutes that have their own targets (make fuzz).
LONG_RUNS := --ignore=tests/production/test_fuzz_served.py
pytest-app: $(VENV)/.dev
	$(VENV)/bin/pytest -n $(PYTEST_WORKERS) --ignore=tests/engine $(LONG_RUNS) $(PYTEST_ARGS)

# The client's own tests, without Django (its own pytest config in client/pyproject.toml).
pytest-client: $(VENV)/.dev
	$(VENV)/bin/pytest client/tests -q

# The engine's suite without pytest-django: proves the engine and its tests
# need no Django (the DJANGO_SETTINGS_MODULE ini key is then unknown).
pytest-engine: $(VENV)/.dev
	$(VENV)/bin/pytest tests/engine -p no:django -q -W ignore::pytest.PytestConfigWarning

# The two short runs side by side, each printed whole when it ends.
SIDE_BY_SIDE := $(MAKE) --no-print-directory -j2 --output-sync=target pytest-client pytest-engine

pytest: pytest-app
	$(SIDE_BY_SIDE)

# Lint first (seconds: a slip fails at once). mypy then runs beside the app's
# suite, whose workers mostly wait on the servers and browsers they start
# (its few lines may land among the suite's progress dots).
test: lint
	$(MAKE) --no-print-directory -j2 typecheck pytest-app
	$(SIDE_BY_SIDE)

# The benches in production's configuration (PostgreSQL + Redis; it stops, saying
# which is missing, without them), each beside its floor in one run
# (bench/run_all.py; BENCH_ARGS=--quick for modest sizes). bench-sqlite: the
# other benches, on SQLite and the process-local cache or in-process.
BENCH_ARGS ?=
bench: $(VENV)/.dev
	$(PY) -m bench.run_all $(BENCH_ARGS)

bench-sqlite: $(VENV)/.dev
	$(PY) -m bench.run_all --sqlite $(BENCH_ARGS)

# The configuration reference, written from the settings' own declarations
# (curfew_site/env.py records each variable as it is read); the suite fails
# when docs/configuration.md differs (tests/test_configuration_reference.py).
docs: $(VENV)/.base
	$(PY) -m curfew_site.configuration --write docs/configuration.md

# Schemathesis over the served OpenAPI document with many more examples than
# `make test` runs (FUZZ_EXAMPLES per operation), in-process; then against
# production mode (bin/serve on PostgreSQL and Redis: DATABASE_URL and
# REDIS_URL, or the local services), which only this target runs.
FUZZ_EXAMPLES ?= 1000
fuzz: $(VENV)/.dev
	CURFEW_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(VENV)/bin/pytest tests/api/test_fuzz_openapi.py -p no:cacheprovider
	$(VENV)/bin/pytest tests/production/test_fuzz_served.py -p no:cacheprovider

# The engine's property suites with many more examples than `make test` runs
# (ENGINE_HYPOTHESIS_EXAMPLES, 120 there), after the OpenAPI fuzz above; then
# the load test held for SOAK_LOAD_SECONDS (20 in `make test`).
SOAK_EXAMPLES ?= 2000
SOAK_LOAD_SECONDS ?= 60
soak: $(VENV)/.dev fuzz
	ENGINE_HYPOTHESIS_EXAMPLES=$(SOAK_EXAMPLES) $(VENV)/bin/pytest tests/engine -p no:django \
		-n $(PYTEST_WORKERS) -q -p no:cacheprovider -W ignore::pytest.PytestConfigWarning
	CURFEW_LOAD_SECONDS=$(SOAK_LOAD_SECONDS) $(VENV)/bin/pytest tests/production/test_load.py \
		-q -p no:cacheprovider

# 10,000 capsule sockets held ten minutes on bin/serve (two workers, PostgreSQL
# and Redis: DATABASE_URL, REDIS_URL), the workers' memory sampled every 30 s,
# pushes timed while they are held, memory after they leave (issues 40 and 41;
# about 15 minutes). CAPSULE_BASELINE=<commit> first runs that commit, briefly, beside it.
# Not part of `make test`; the open-file limit must allow 11,000 (ulimit -Hn).
CAPSULE_BASELINE ?=
capsule-soak: $(VENV)/.dev
	$(PY) -m bench.capsule_soak $(if $(CAPSULE_BASELINE),--baseline $(CAPSULE_BASELINE)) $(CAPSULE_SOAK_ARGS)

clean:
	rm -rf $(VENV) staticfiles .pytest_cache .mypy_cache .ruff_cache

# Production: see bin/serve (needs SECRET_KEY, and DATABASE_URL/REDIS_URL for more than one process).
serve: $(VENV)/.base
	bin/serve

screenshots: $(VENV)/.dev  ## refresh docs/screenshots (the README's pictures) from the browser suite
	CURFEW_DOCS_SCREENSHOTS=1 $(PY) -m pytest -q -p no:randomly tests/browser/test_sections.py -k "clean_and_fits"

# The real tools against a served Curfew, off duty, winding and on duty, set up
# as the Integrations page says (tests/clients/run.py); writes docs/clients.md.
# Not part of `make test`: it installs the tools from npm and PyPI into
# .local/clients/ (aider in a venv of its own: it pins its own openai and
# litellm) and takes minutes. CLIENTS_ONLY=claude-code,aider runs a few (their rows
# replace theirs in docs/clients.md, the others stay); the hooks and plugins alone:
# CLIENTS_ONLY=claude-code-hooks,claude-code-plugin,codex-hooks,opencode-plugin.
CLIENTS := $(LOCAL)/clients
CLIENTS_NPM := @anthropic-ai/claude-code @openai/codex opencode-ai
CLIENTS_ONLY ?=
clients: $(VENV)/.dev
	mkdir -p $(CLIENTS)/npm
	npm install --silent --no-audit --no-fund --prefix $(CLIENTS)/npm $(CLIENTS_NPM)
	test -x $(CLIENTS)/py-venv/bin/python || $(PYTHON) -m venv $(CLIENTS)/py-venv
	$(CLIENTS)/py-venv/bin/pip install --quiet --disable-pip-version-check llm openai anthropic 'pydantic-ai-slim[openai]' openai-agents google-genai './client[litellm]'
	test -x $(CLIENTS)/aider-venv/bin/python || $(PYTHON) -m venv $(CLIENTS)/aider-venv
	$(CLIENTS)/aider-venv/bin/pip install --quiet --disable-pip-version-check aider-chat
	$(PY) -m tests.clients.run --write docs/clients.md $(if $(CLIENTS_ONLY),--only $(CLIENTS_ONLY))
