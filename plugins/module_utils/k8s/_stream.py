# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: a response body read as it arrives — a list's items decoded one at a time, a
watch's events one a line. Not a public API."""

from __future__ import annotations

import codecs
import json


def stream_items(chunks, keep=None) -> list:
    """The items of a JSON list response, decoded one at a time as its body arrives (``chunks``: an
    iterable of bytes) and each passed through ``keep``, so that only what ``keep`` returns stays in
    memory, never the whole body; an item for which it returns None is not kept at all. The API server
    writes a list's ``items`` last, after its metadata."""
    keep = keep or (lambda o: o)
    dec = json.JSONDecoder()
    utf8 = codecs.getincrementaldecoder("utf-8")()
    chunks = iter(chunks)
    buf, pos, items = "", 0, []

    def read() -> bool:
        nonlocal buf, pos
        for data in chunks:
            buf, pos = buf[pos:] + utf8.decode(data), 0
            return True
        return False

    while buf.find('"items":[') < 0:
        if not read():
            kept = (keep(o) for o in json.loads(buf).get("items") or [])  # an empty list's items: null
            return [k for k in kept if k is not None]
    pos = buf.find('"items":[') + len('"items":[')
    while True:
        while True:
            while pos < len(buf) and buf[pos] in " \t\r\n,":
                pos += 1
            if pos < len(buf) or not read():
                break
        if pos >= len(buf):
            raise ValueError("the list ended inside its items")
        if buf[pos] == "]":
            return items
        try:
            obj, pos = dec.raw_decode(buf, pos)
        except json.JSONDecodeError:
            if not read():
                raise
            continue
        kept = keep(obj)
        if kept is not None:
            items.append(kept)


def lines(resp):
    """The lines of a streamed response (a watch: one JSON event a line), as they arrive."""
    buf = b""
    for chunk in resp.stream(None, decode_content=False):
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if line.strip():
                yield line
    if buf.strip():
        yield buf
