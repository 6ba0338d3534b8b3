# gangsched.kubeflow: the collection and its local lab cluster.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python

.PHONY: demo demo-build scheduler-demo collection test compat minor venv build up down status lint bench clean sanity molecule tarball changelog

GANG_SCHEDULER ?= volcano
SCHEDULER_PLUGINS_MODE ?= second

TRAINER ?=
WITH_TRAINER := $(filter 1 true yes,$(TRAINER))
KUEUE ?=
WITH_KUEUE := $(filter 1 true yes,$(KUEUE))

# The venv is made while the Go builds run (`python -m lab build` needs nothing but the standard library): pip waits
# on the network, the builds on the CPU
demo: collection ## the lab up (4 GPU nodes), site.yml on it (GANG_SCHEDULER=volcano|scheduler_plugins|koordinator|native, TRAINER=1 for Kubeflow Trainer v2, KUEUE=1 for Kueue in front), its report; builds only what that path needs
	$(MAKE) --no-print-directory -j2 venv demo-build
	$(PY) -m lab up --reuse
	ANSIBLE_CONFIG=$(CURDIR)/ansible.cfg $(VENV)/bin/ansible-playbook -i inventories/lab playbooks/site.yml \
	  -e gangsched_gang_scheduler=$(GANG_SCHEDULER) -e scheduler_plugins_mode=$(SCHEDULER_PLUGINS_MODE) \
	  -e gang_smoke_test_control=true $(if $(WITH_TRAINER),-e gangsched_trainer=true) \
	  $(if $(WITH_KUEUE),-e gangsched_kueue=true $(if $(filter native,$(GANG_SCHEDULER)),-e native_gang_job_integration=true))

demo-build: ## the Go builds of make demo's path (with the standard library's Python: the venv may not be made yet)
	$(PYTHON) -m lab build --for $(GANG_SCHEDULER) $(if $(WITH_TRAINER),--for trainer) $(if $(WITH_KUEUE),--for kueue)

scheduler-demo: build ## the lab alone, no collection: gang vs no gang with the real schedulers
	$(PY) -m lab gang-demo

# the link made once and left alone after: make test's lanes run Molecule through this target while the others' tests
# read it
collection: ## the checkout as the collection gangsched.kubeflow (.collections/ansible_collections/gangsched/kubeflow)
	mkdir -p .collections/ansible_collections/gangsched
	[ "$$(readlink .collections/ansible_collections/gangsched/kubeflow)" = ../../.. ] || \
	  ln -sfn ../../.. .collections/ansible_collections/gangsched/kubeflow

# Playbook-test files that run in the first lane instead (by the measured stage times). None from 2026-11-29
# (evening), when that lane was the longest; on 2026-11-30 (evening), with the lab tests' CRDs read through libyaml,
# the first lane ended 192 s before the playbooks (compat 457 s and unit-lab 1,512 s; the playbooks 2,161 s; the
# third lane 2,104 s), so the koordinator role's file (110 s) runs there
PLAYBOOK_TESTS_IN_FIRST_LANE = tests/playbooks/test_koordinator_role.py
# Lab-test files that run in the playbooks lane instead, after its longest files (by the measured stage times): on
# 2026-11-29 (night) the first lane ended 215 s after the others (compat 422 s, Molecule's kubeflow_gang 197 s,
# unit-lab 1,663 s; the playbooks 2,067 s; the third lane 2,042 s); on 2026-11-30 it still ended 224 s and 227 s
# after the next (unit-lab 1,783 s and 1,890 s), so gang_info's lab file (213-223 s) moved too
LAB_TESTS_IN_PLAYBOOKS = tests/lab/modules/test_api_restart.py tests/lab/modules/test_gang_info.py
# The Molecule scenarios are make test's shared stages (tests/lanes.py --shared): each lane, its own stages done, takes
# the next scenario left, so the lanes end together however the hour went (with the scenarios fixed in the third lane,
# after the 1.33 cell and lint, that lane ended 70-100 s after the other two on 2026-12-01). Longest first, by the
# measured stage times (2026-12-01: kubeflow_gang 171 s, trainer 150, kueue 128, gang_smoke_test 127, native_gang 109,
# volcano 60, scheduler_plugins 50, koordinator 49, gpu_device_plugin 31), so the last ones taken are short; a scenario
# not named here comes last.
MOLECULE_SCENARIOS = $(patsubst extensions/molecule/%/molecule.yml,%,$(wildcard extensions/molecule/*/molecule.yml))
MOLECULE_ORDER = kubeflow_gang trainer kueue gang_smoke_test native_gang volcano scheduler_plugins koordinator gpu_device_plugin
MOLECULE_SHARED = $(filter $(MOLECULE_SCENARIOS),$(MOLECULE_ORDER)) $(filter-out $(MOLECULE_ORDER),$(MOLECULE_SCENARIOS))

# make test's stages in lanes that run side by side, each lane on a lab of its own (tests/lanes.py): the
# lab tests mostly wait on the cluster, so the lanes share the CPU well; each stage's time is printed. The stages
# of one process (compat, the 1.33 cell) run first, the pytest stages of two workers last, their longest files
# first (tests/file_seconds.json, refreshed from .labs/logs/file_seconds.json after a run): so the run ends with
# the machine busy, not with one lane's last file alone (2026-11-29: the last 450 s left a quarter of the CPU idle).
TEST_LANES = \
  'compat=$(PY) tests/compat.py oldest newest; unit-lab=$(PY) -m pytest -q -rfE --durations=12 -n 2 --dist loadfile --no-loadscope-reorder --file-seconds-out=.labs/logs/file_seconds.json tests/unit tests/lab $(PLAYBOOK_TESTS_IN_FIRST_LANE) $(LAB_TESTS_IN_PLAYBOOKS:%=--ignore=%)' \
  'playbooks=$(PY) -m pytest -q -rfE --durations=12 -n 2 --dist loadfile --no-loadscope-reorder --file-seconds-out=.labs/logs/file_seconds.json tests/playbooks $(PLAYBOOK_TESTS_IN_FIRST_LANE:%=--ignore=%) $(LAB_TESTS_IN_PLAYBOOKS)' \
  'k8s-1.33=$(MAKE) --no-print-directory minor MINOR=1.33; lint-sanity=$(MAKE) --no-print-directory lint sanity' \
  --shared '$(foreach s,$(MOLECULE_SHARED),molecule-$(s)=$(MAKE) --no-print-directory molecule MOLECULE_ONLY=$(s);)'

test: build ## lint, sanity, unit tests, lab and module tests, the oldest and newest supported stack, the playbooks and every Molecule scenario, in lanes side by side; each stage's time
	$(PY) tests/lanes.py $(TEST_LANES)

compat: build ## the supported-versions matrix: a venv per cell (Python, ansible-core, kubernetes client, kubernetes.core), unit tests and a lab check in each
	$(PY) tests/compat.py $(CELLS)

# The collection on another Kubernetes minor than the lab's default (1.37): its control plane built on first use,
# then what differs by minor, each on a fresh lab of that minor: site.yml with Volcano and its smoke test, a second
# run, gang_info; scheduler-plugins in both modes (its release follows the minor; the default mode rewrites that
# minor's kube-scheduler static pod); the compat lab check with the newest client (its modules' calls). Not run
# there, as the same on every minor: check mode on a fresh lab, uninstall, the compat cell's unit tests and its
# site.yml twice (the playbook tests above run site.yml twice on that minor).
MINOR ?= 1.33
MINOR_TESTS = tests/playbooks/test_site_volcano.py::test_site_installs_the_chain_and_proves_it \
  tests/playbooks/test_site_volcano.py::test_second_run_changes_nothing \
  tests/playbooks/test_site_volcano.py::test_gang_info_sees_no_problem \
  tests/playbooks/test_site_scheduler_plugins.py::test_second_scheduler \
  tests/playbooks/test_site_scheduler_plugins.py::test_second_scheduler_uninstall \
  tests/playbooks/test_site_scheduler_plugins.py::test_default_scheduler_and_restore

minor: venv collection ## the collection on Kubernetes $(MINOR) (MINOR=1.33): site.yml with Volcano and its proof, scheduler-plugins in both modes, the compat lab check
	-GANGSCHED_LAB_KUBERNETES=$(MINOR) $(PY) -m lab down
	GANGSCHED_LAB_KUBERNETES=$(MINOR) $(PY) -m lab build --for volcano --for scheduler_plugins --for kubectl
	GANGSCHED_LAB_KUBERNETES=$(MINOR) $(PY) -m pytest -q -rfE -p no:cacheprovider $(MINOR_TESTS)
	GANGSCHED_LAB_KUBERNETES=$(MINOR) $(PY) tests/compat.py --no-unit --no-roles newest

molecule: build collection ## every Molecule scenario (extensions/molecule/*): a fresh lab, converge, idempotence, verify, cleanup (MOLECULE_ONLY=<scenario ...> or MOLECULE_EXCEPT=<scenario ...>: some)
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH GANGSCHED_LAB_DIR=$${GANGSCHED_LAB_DIR:-$(CURDIR)/.lab} $(VENV)/bin/molecule test \
	  $(if $(MOLECULE_ONLY),$(MOLECULE_ONLY:%=-s %),--all $(MOLECULE_EXCEPT:%=--exclude %))

# .venv: a link to the venv of requirements.txt's pins under the build cache, made there once (lab/venvs.py): a fresh
# clone with a warm cache starts at once (a venv and its pip install took about a minute)
venv: ## the checkout's .venv for requirements.txt (a link into the build cache; made there on first use)
	$(PYTHON) -m lab.venvs $(VENV) requirements.txt

build: venv ## Go builds into the cache outside the checkout (skips what is built)
	$(PY) -m lab build

up: build
	$(PY) -m lab up --reuse

down:
	-$(PY) -m lab down

status:
	$(PY) -m lab status

lint: venv ## ruff, ansible-doc must render every module, ansible-lint (production profile) over the whole collection, changelog lint and fragments, the built tarball, and galaxy-importer on it as Galaxy runs it
	$(VENV)/bin/ruff check lab tests bench plugins
	$(VENV)/bin/ruff format --check lab tests bench plugins
	$(VENV)/bin/python tests/render_docs.py
	$(VENV)/bin/ansible-lint
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/antsibull-changelog lint
	$(VENV)/bin/python tests/changelog_check.py
	$(MAKE) tarball
	$(VENV)/bin/python tests/galaxy_import_check.py

tarball: venv ## ansible-galaxy collection build: no developer file in it, installs offline, ansible-doc works from the install
	$(VENV)/bin/python tests/tarball_check.py

changelog: venv ## changelogs/changelog.yaml and CHANGELOG.rst from the fragments (edited ones too), for galaxy.yml's version
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/antsibull-changelog release --reload-plugins --refresh-fragments without-archives

bench: build collection ## prints the lab's figures, then the collection's (site.yml, smoke test, gang_info at 1,000 and at 5,000 nodes, each path's verdict after its scheduler's decision, drift and the converge on a cluster a round trip away)
	$(PY) bench/lab_figures.py
	$(PY) bench/gang_figures.py
	$(PY) bench/gang_figures.py --only-gang-info --nodes 5000 --pods 50000
	$(PY) bench/far_figures.py
	$(PY) bench/verdict_figures.py

clean: down
	rm -rf .lab

sanity: venv ## every ansible-test sanity test (24: compile, import, pep8, pylint, validate-modules, yamllint, changelog ...) on the collection
	$(PY) tests/sanity.py
