"""The kubelet's pod-resources API (``v1.PodResourcesLister`` on ``<root-dir>/pod-resources/kubelet.sock``),
read with the standard library: one unary gRPC call over HTTP/2 on a unix socket, the messages decoded by
field number. A standalone kubelet has no API server to post its node status to; this API is how it says
which devices it can allocate and which it gave to which pod.
"""

from __future__ import annotations

import socket
import struct
import time

_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_DATA, _HEADERS, _RST, _SETTINGS, _PING, _GOAWAY = 0, 1, 3, 4, 6, 7
_END_STREAM, _END_HEADERS, _ACK = 0x1, 0x4, 0x1


class PodResourcesError(RuntimeError):
    pass


def _hpack_int(value: int, prefix_bits: int, first: int = 0) -> bytes:
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append((value % 128) + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def _hpack_literal(name: str, value: str) -> bytes:
    """A header as 'literal without indexing, new name', no Huffman coding (RFC 7541 6.2.2)."""
    n, v = name.encode(), value.encode()
    return b"\x00" + _hpack_int(len(n), 7) + n + _hpack_int(len(v), 7) + v


def _frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def _read_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise PodResourcesError("the kubelet closed the pod-resources connection")
        buf += chunk
    return buf


def call(socket_path: str, method: str, request: bytes = b"", timeout: float = 5.0) -> bytes:
    """The response message of the unary call ``/v1.PodResourcesLister/<method>``."""
    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(socket_path)
        except OSError as e:
            raise PodResourcesError(f"cannot connect to {socket_path}: {e.strerror or e}") from e
        headers = b"".join(
            _hpack_literal(k, v)
            for k, v in (
                (":method", "POST"),
                (":scheme", "http"),
                (":path", f"/v1.PodResourcesLister/{method}"),
                (":authority", "localhost"),
                ("content-type", "application/grpc"),
                ("te", "trailers"),
            )
        )
        message = b"\x00" + struct.pack(">I", len(request)) + request
        sock.sendall(
            _PREFACE
            + _frame(_SETTINGS, 0, 0)
            + _frame(_HEADERS, _END_HEADERS, 1, headers)
            + _frame(_DATA, _END_STREAM, 1, message)
        )
        data = b""
        while True:
            if time.monotonic() > deadline:
                raise PodResourcesError(f"{method}: no answer within {timeout:.0f}s")
            head = _read_exact(sock, 9)
            length = struct.unpack(">I", b"\x00" + head[:3])[0]
            kind, flags, stream = head[3], head[4], struct.unpack(">I", head[5:9])[0] & 0x7FFFFFFF
            payload = _read_exact(sock, length)
            if kind == _SETTINGS and not flags & _ACK:
                sock.sendall(_frame(_SETTINGS, _ACK, 0))
            elif kind == _PING and not flags & _ACK:
                sock.sendall(_frame(_PING, _ACK, 0, payload))
            elif kind == _GOAWAY or (kind == _RST and stream == 1):
                raise PodResourcesError(f"{method}: the kubelet reset the call")
            elif kind == _DATA and stream == 1:
                if flags & 0x8:  # padded
                    payload = payload[1 : len(payload) - payload[0]]
                data += payload
                if flags & _END_STREAM:
                    break
            elif kind == _HEADERS and stream == 1 and flags & _END_STREAM:
                break
    if len(data) < 5:
        raise PodResourcesError(f"{method}: the kubelet answered no message (the call failed; see the kubelet's log)")
    size = struct.unpack(">I", data[1:5])[0]
    return data[5 : 5 + size]


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7


def fields(buf: bytes) -> list[tuple[int, int | bytes]]:
    """A protobuf message as (field number, value) pairs: varints as ints, length-delimited as bytes."""
    out: list[tuple[int, int | bytes]] = []
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 2:
            n, i = _varint(buf, i)
            value, i = buf[i : i + n], i + n
        elif wire == 1:
            value, i = buf[i : i + 8], i + 8
        elif wire == 5:
            value, i = buf[i : i + 4], i + 4
        else:
            raise PodResourcesError(f"unexpected protobuf wire type {wire}")
        out.append((number, value))
    return out


def _devices(buf: bytes) -> tuple[str, list[str]]:
    """ContainerDevices: resource_name = 1, device_ids = 2."""
    name, ids = "", []
    for number, value in fields(buf):
        if number == 1:
            name = value.decode()
        elif number == 2:
            ids.append(value.decode())
    return name, ids


def allocatable(socket_path: str, timeout: float = 5.0) -> dict[str, list[str]]:
    """Resource name -> the device IDs the kubelet can allocate (GetAllocatableResources: devices = 1)."""
    out: dict[str, list[str]] = {}
    for number, value in fields(call(socket_path, "GetAllocatableResources", timeout=timeout)):
        if number == 1:
            name, ids = _devices(value)
            out.setdefault(name, []).extend(ids)
    return out


def pods(socket_path: str, timeout: float = 5.0) -> dict[str, dict[str, dict[str, list[str]]]]:
    """``namespace/pod`` -> container -> resource name -> device IDs the kubelet gave it (List:
    pod_resources = 1 {name = 1, namespace = 2, containers = 3 {name = 1, devices = 2}})."""
    out: dict[str, dict[str, dict[str, list[str]]]] = {}
    for number, pod in fields(call(socket_path, "List", timeout=timeout)):
        if number != 1:
            continue
        name = namespace = ""
        containers: dict[str, dict[str, list[str]]] = {}
        for n, v in fields(pod):
            if n == 1:
                name = v.decode()
            elif n == 2:
                namespace = v.decode()
            elif n == 3:
                cname, devs = "", {}
                for cn, cv in fields(v):
                    if cn == 1:
                        cname = cv.decode()
                    elif cn == 2:
                        rname, ids = _devices(cv)
                        devs.setdefault(rname, []).extend(ids)
                containers[cname] = devs
        out[f"{namespace}/{name}"] = containers
    return out
