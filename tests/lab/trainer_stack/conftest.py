"""One lab for every file here, with scheduler-plugins (second scheduler), JobSet and Trainer v2 installed once
(about 45 s): the files run whole on one worker (tests/conftest.py schedules a package of test files as one unit),
each adds its own runtimes under names of its own and leaves no TrainJob, pod or GPU taken behind it."""

from __future__ import annotations

import pytest
from fresh_lab import fresh_lab

from lab import scenarios


@pytest.fixture(scope="package")
def lab():
    yield from fresh_lab()


@pytest.fixture(scope="package")
def trainer_stack(lab):
    # the PodGroup CRD first: Trainer watches PodGroups only if their CRD exists when it starts
    scenarios.install_scheduler_plugins(lab)
    scenarios.install_jobset(lab)
    scenarios.install_trainer(lab)
    return lab


@pytest.fixture
def ns(trainer, namespace):
    """A namespace of the test's own, made after its file's ``trainer`` fixture (which adds the file's runtimes)."""
    return namespace
