"""A pynvml-shaped binding (the calls gpu_node_info makes, as nvidia-ml-py names and returns them) over the lab's
stand-in libnvidia-ml (lab/gpu/c/nvml_standin.c), compiled here: the module's NVML reads run against a C NVML
without a GPU or nvidia-ml-py."""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[5] / "lab" / "gpu" / "c" / "nvml_standin.c"
_MESSAGES = {1: "Uninitialized", 2: "Invalid Argument", 3: "Not Supported", 6: "Not Found", 9: "Driver Not Loaded"}


def compile_standin(out: Path) -> Path:
    lib = out / "libnvidia-ml.so.1"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(lib), str(SOURCE)], check=True)
    return lib


class NVMLError(Exception):
    def __init__(self, value: int):
        self.value = value
        super().__init__(value)

    def __str__(self) -> str:
        return _MESSAGES.get(self.value, f"Unknown Error {self.value}")


class _Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class StandinPynvml:
    NVMLError = NVMLError

    def __init__(self, lib: Path):
        self.lib = ctypes.CDLL(str(lib))

    def _check(self, rc: int) -> None:
        if rc != 0:
            raise NVMLError(rc)

    def _string(self, fn, *args) -> str:
        buf = ctypes.create_string_buffer(96)
        self._check(fn(*args, buf, ctypes.c_uint(96)))
        return buf.value.decode()

    def nvmlInit(self):
        self._check(self.lib.nvmlInit_v2())

    def nvmlShutdown(self):
        self._check(self.lib.nvmlShutdown())

    def nvmlSystemGetDriverVersion(self) -> str:
        return self._string(self.lib.nvmlSystemGetDriverVersion)

    def nvmlDeviceGetCount(self) -> int:
        n = ctypes.c_uint()
        self._check(self.lib.nvmlDeviceGetCount_v2(ctypes.byref(n)))
        return n.value

    def nvmlDeviceGetHandleByIndex(self, i: int):
        h = ctypes.c_void_p()
        self._check(self.lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(i), ctypes.byref(h)))
        return h

    def nvmlDeviceGetName(self, h) -> str:
        return self._string(self.lib.nvmlDeviceGetName, h)

    def nvmlDeviceGetUUID(self, h) -> str:
        return self._string(self.lib.nvmlDeviceGetUUID, h)

    def nvmlDeviceGetMemoryInfo(self, h) -> _Memory:
        m = _Memory()
        self._check(self.lib.nvmlDeviceGetMemoryInfo(h, ctypes.byref(m)))
        return m

    def nvmlDeviceGetMigMode(self, h) -> list[int]:
        cur, pend = ctypes.c_uint(), ctypes.c_uint()
        self._check(self.lib.nvmlDeviceGetMigMode(h, ctypes.byref(cur), ctypes.byref(pend)))
        return [cur.value, pend.value]

    def nvmlDeviceGetPersistenceMode(self, h) -> int:
        mode = ctypes.c_int()
        self._check(self.lib.nvmlDeviceGetPersistenceMode(h, ctypes.byref(mode)))
        return mode.value

    def nvmlDeviceGetTotalEccErrors(self, h, error_type: int, counter_type: int) -> int:
        n = ctypes.c_ulonglong()
        self._check(self.lib.nvmlDeviceGetTotalEccErrors(h, error_type, counter_type, ctypes.byref(n)))
        return n.value
