# The README's commands. `make demo` and `make test` set everything up on first use: a local run
# needs only what running a case needs (LOCAL); the tests, lint, the Pulumi program and the
# rehearsal add the development toolchain (READY).
VENV   ?= .venv
PY     := $(VENV)/bin/python
LOCAL  := $(VENV)/.installed-local
READY  := $(VENV)/.installed
# One test worker per core (pytest-xdist), each given whole test files, so a module's costly
# fixture (its services, its moto, every --help) is made once; a free worker takes the file that
# cost most in the last run (tests/support/xdist_order.py). (xdist 3.8's loadgroup does not
# group under pytest 9, whose items no longer take a new node id.)
PARALLEL ?= -n auto --dist loadfile

.PHONY: demo test test-fast report-screenshot bench policies policies-check manifests rehearse lint clean

$(LOCAL): requirements-local.txt requirements-runtime.txt requirements.lock scripts/bootstrap.sh
	@scripts/bootstrap.sh $(VENV) local

$(READY): requirements.txt requirements-local.txt requirements-runtime.txt requirements.lock scripts/bootstrap.sh
	@scripts/bootstrap.sh $(VENV) dev

## demo: run the sample case rfp-001 under bubblewrap, then nono, and print every check
demo: $(LOCAL)
	$(PY) -m app.controller demo $(if $(WORKDIR),--workdir "$(WORKDIR)")

## test: the whole suite (unit, Pulumi mocks, real bwrap/nono-py/moto/TLS integration, report.html in headless Chromium)
test: $(READY)
	@scripts/browser.sh
	$(PY) -m pytest -q $(PARALLEL)

## test-fast: the unit and Pulumi-mock tests alone: no real sandbox, moto or TLS server
test-fast: $(READY)
	$(PY) -m pytest -q $(PARALLEL) -m "not integration" tests/unit tests/infra

## report-screenshot: re-render docs/images/report.png, the README's picture of a report, from a real run
report-screenshot: $(READY)
	@scripts/browser.sh
	PYTHONPATH=. $(PY) scripts/report_screenshot.py

## bench: each figure beside its goal: tool start-up per layer, the supplier API under slow clients, whole cases alone (wall, CPU, phases), 32 at once
bench: $(LOCAL)
	$(PY) -m bench

## policies: re-render the committed confinement policies under policies/
policies: $(LOCAL)
	$(PY) -m app.tools.bubblewrap.render
	$(PY) -m app.tools.nono.render

## policies-check: fail if policies/ and the code disagree
policies-check: $(LOCAL)
	$(PY) -m app.tools.bubblewrap.render --check
	$(PY) -m app.tools.nono.render --check

## manifests: every Kubernetes object the Pulumi program creates, one YAML file each
manifests: $(READY)
	$(PY) -m infra.render_manifests --out build/manifests

## rehearse: each layer's Job pod under each runtime target, run as the kubelet would (root)
rehearse: $(READY)
	$(PY) -m rehearsal all --runtime-target isolated-sandbox
	$(PY) -m rehearsal all --runtime-target hardened-container

## lint: ruff, strict mypy (app/, infra/, bench/, rehearsal/, tests/support/, policies/pack/), and the workflows
lint: $(READY)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(VENV)/bin/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(VENV)/bin/zizmor --offline .github/workflows
	$(PY) -m mypy

## clean: remove build/, runs/ and pytest's cache
clean:
	rm -rf build runs .pytest_cache
