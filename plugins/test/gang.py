# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests the roles use; each is documented in the YAML file of the same name next to this one."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _operators

TRUTHY = ("true", "nvidia")


def labels_match(labels: dict, selector: dict | None = None, any_of: list | None = None) -> bool:
    """True when node ``labels`` satisfy ``selector`` (all key=value pairs), or, with an empty selector,
    when any label named in ``any_of`` is set to true (or NVIDIA, as NFD's vendor label)."""
    labels = labels or {}
    if selector:
        return all(str(labels.get(k)) == str(v) for k, v in selector.items())
    return any(str(labels.get(k, "")).lower() in TRUTHY for k in any_of or [])


def dns_label(value) -> bool:
    """True when ``value`` is a DNS-1123 label (a namespace's, a release's or a scheduler profile's name): lower-case
    letters, digits and '-', starting and ending with a letter or digit, at most 63 characters."""
    return isinstance(value, str) and bool(_operators.DNS1123_LABEL.match(value))


class TestModule:
    def tests(self):
        return {"labels_match": labels_match, "dns_label": dns_label}
