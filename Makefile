# switchboard: `make local` runs everything on this machine; `make test` runs every check.
# The Lambda runtime's Python (3.13) when this machine has it, else the default python3.
PYTHON ?= $(shell for p in python3.13 $(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3.13) python3; do \
	$$p -c 'import sys' >/dev/null 2>&1 && { echo $$p; break; }; done)
VENV := .venv
PY := $(VENV)/bin/python
# `make cli` answers JSON that is piped on: never "Entering directory" lines, even under another make.
MAKEFLAGS += --no-print-directory
SAM_VENV := .sam-venv
STAMP := $(VENV)/.installed

.PHONY: local test lint typecheck unit build coldstart openapi bench soak clean deploy-console chromium cli

$(STAMP): requirements-dev.txt layers/shared/requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $(STAMP)

## Run the whole system locally: AWS endpoint, gateway, workers, scheduler, provider simulator.
local: $(STAMP)
	$(PY) -m devstack

# The test runs keep bytecode, whatever the shell says: with PYTHONDONTWRITEBYTECODE set, every run
# compiles the layer, devstack and the tests again and pytest rewrites every test module's asserts
# again, each xdist worker on its own (about half of a unit run's collection).
test unit: export PYTHONDONTWRITEBYTECODE :=

## Every check CI runs: lint, format, types, template lint, tests (one pytest worker per core; a
## test file stays on one worker, so its module fixtures start once).
test: lint typecheck chromium
	$(PY) -m pytest -n auto --dist loadfile

## The fast loop: the tests on fakes only (no moto, no server, no browser), in parallel.
unit: $(STAMP)
	$(PY) -m pytest -m unit -n auto --dist loadfile

## Style and format (ruff), the capabilities' import order (import-linter, pyproject.toml) and the
## template (cfn-lint).
lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	PYTHONPATH=layers/shared $(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/cfn-lint template.yaml

typecheck: $(STAMP)
	$(PY) -m mypy

## Debian's Chromium, which the browser tests (tests/console) drive: installed when missing,
## through sudo unless root. Playwright's own browser download is never used.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
		SUDO=$$(test "$$(id -u)" -eq 0 || echo sudo); \
		$$SUDO apt-get update && \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; }

## `sam build` (no container), in its own environment: aws-sam-cli pins its own boto3.
build:
	test -x $(SAM_VENV)/bin/sam || ($(PYTHON) -m venv $(SAM_VENV) && $(SAM_VENV)/bin/pip install --quiet aws-sam-cli==1.170.0)
	PATH="$(CURDIR)/$(SAM_VENV)/bin:$$PATH" sam build
	# Lambda's file system is read-only: without bytecode in the package, every cold start compiles
	# the layer again. Unchecked-hash .pyc files are used as they are (built by the same Python).
	$(SAM_VENV)/bin/python -m compileall -q -j 0 --invalidation-mode unchecked-hash .aws-sam/build

## Upload console/ to the deployed stack's bucket and invalidate its CloudFront distribution
## (after `sam deploy`; STACK=<name> REGION=<region> override samconfig.toml's).
deploy-console: $(STAMP)
	$(PY) -m tools.deploy_console $(if $(STACK),--stack-name $(STACK)) $(if $(REGION),--region $(REGION))

## The operator CLI (`python -m switchboard`) with the layer on its path, against the deployment the
## environment names (TABLE_NAME, SECRETS_PREFIX, AWS_REGION): make cli ARGS="create-tenant --owner-tag acme --name Acme".
## The virtual environment is created when missing, never reinstalled for it.
cli:
	@test -x $(PY) || $(MAKE) --no-print-directory $(STAMP)
	@PYTHONPATH=layers/shared $(PY) -m switchboard $(ARGS)

## Cold-start import cost of each handler, as a ratio to `import boto3` in the same run.
coldstart: $(STAMP)
	$(PY) tools/coldstart.py

## The OpenAPI document the docs function serves, regenerated from the routers.
openapi: $(STAMP)
	$(PY) tools/openapi.py

## Every benchmark, its figures recorded in docs/measurements.json and docs/measurements.md written
## from them (the runs table there gives how long each took); BENCH="pool shards" runs only those
## named and rewrites only their sections.
bench: $(STAMP)
	$(PY) -m tools.bench $(BENCH)

## The soak (not in CI): the local stack under mixed traffic and faults for MINUTES, then what was
## lost, doubled or stuck (docs/soak.md). Figures in SOAK_REPORT; SOAK_ARGS passes more options.
MINUTES ?= 30
SOAK_REPORT ?= .soak/report.json
soak: $(STAMP)
	$(PY) -m tools.soak --minutes $(MINUTES) --json $(SOAK_REPORT) $(SOAK_ARGS)

clean:
	rm -rf $(VENV) $(SAM_VENV) .aws-sam
