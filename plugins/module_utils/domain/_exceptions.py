# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: exceptions raised by helpers; only a module's main() turns them into a
failed task. Not a public API; may change without notice."""

from __future__ import annotations


class GangError(Exception):
    """A failure with a message that names the object and what to do about it."""

    def __init__(self, msg: str, **details):
        super().__init__(msg)
        self.msg = msg
        self.details = details


class ApiError(GangError):
    """A Kubernetes API call failed; ``status`` is the HTTP status (0 when the server was not reached)."""

    def __init__(self, msg: str, status: int = 0, reason: str = ""):
        super().__init__(msg, status=status, reason=reason)
        self.status = status
        self.reason = reason


class NotFound(ApiError):
    pass


class Conflict(ApiError):
    pass


class Forbidden(ApiError):
    pass
