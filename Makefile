# gangsched.kubeflow: the collection and its local lab cluster.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python

.PHONY: demo test venv build up down status lint bench clean

demo: build ## build and start the lab, then show gang vs no gang with the real schedulers
	$(PY) -m lab gang-demo

test: build ## unit tests and the lab tests (starts and stops its own lab)
	$(PY) -m pytest -q tests

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

lint: venv
	$(VENV)/bin/ruff check lab tests bench
	$(VENV)/bin/ruff format --check lab tests bench

bench: build ## prints build/up/memory/disk figures of the lab
	$(PY) bench/lab_figures.py

clean: down
	rm -rf .lab
