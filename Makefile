# gangsched.kubeflow: the collection and its local lab cluster.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python

.PHONY: demo test venv build up down status lint bench clean sanity

demo: build ## build and start the lab, then show gang vs no gang with the real schedulers
	$(PY) -m lab gang-demo

test: build ## lint, sanity, unit tests, lab and module tests, then the playbooks on fresh labs (each starts and stops its own lab)
	$(MAKE) lint sanity
	$(PY) -m pytest -q tests/unit tests/lab
	$(PY) -m pytest -q tests/playbooks

venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements.txt
	touch $@

build: venv ## Go builds into the cache outside the checkout (skips what is built)
	$(PY) -m lab build

up: build
	$(PY) -m lab up --reuse

down:
	-$(PY) -m lab down

status:
	$(PY) -m lab status

lint: venv ## ruff, ansible-doc must render every module, ansible-lint (production profile) over roles and playbooks
	$(VENV)/bin/ruff check lab tests bench plugins
	$(VENV)/bin/ruff format --check lab tests bench plugins
	$(VENV)/bin/python tests/render_docs.py
	$(VENV)/bin/ansible-lint roles playbooks

bench: build ## prints build/up/memory/disk figures of the lab
	$(PY) bench/lab_figures.py

clean: down
	rm -rf .lab

sanity: venv ## ansible-test sanity (compile, import, pep8, validate-modules, ansible-doc ...) on the collection
	$(PY) tests/sanity.py
