"""A tiny wheel written by hand, for tests of job environments (no build backend, no network).

``build_wheel(folder, name, source)`` writes ``<name>-0.1-py3-none-any.whl`` holding one module
``<name>.py`` with ``source``, as pip expects it (METADATA, WHEEL, RECORD). Import as
``from tiny_wheel import build_wheel`` (tests/ is on sys.path through its conftest).
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def build_wheel(folder: Path, name: str, source: str, version: str = "0.1") -> Path:
    dist_info = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": source.encode(),
        f"{dist_info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        ).encode(),
        f"{dist_info}/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: steward-tests\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n"
        ),
    }
    record = [f"{path},sha256={_digest(data)},{len(data)}" for path, data in files.items()]
    files[f"{dist_info}/RECORD"] = ("\n".join([*record, f"{dist_info}/RECORD,,"]) + "\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
