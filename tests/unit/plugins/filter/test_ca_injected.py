"""The ca_injected filter: a webhook configuration counts once every webhook in it carries a CA bundle."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.gangsched.kubeflow.plugins.filter.gang import ca_injected


def _conf(name, *bundles):
    return {"metadata": {"name": name}, "webhooks": [{"clientConfig": {"caBundle": b} if b else {}} for b in bundles]}


def test_only_configurations_whose_every_webhook_has_its_ca():
    confs = [_conf("all", "Y2E=", "Y2E="), _conf("one-missing", "Y2E=", None), _conf("empty", ""), _conf("none")]
    assert ca_injected(confs) == ["all"]


def test_bad_input_is_named():
    with pytest.raises(AnsibleFilterError, match="needs a list of webhook configurations"):
        ca_injected({"metadata": {}})
