"""The name a Steward process goes by in the kernel (its ``comm``: what ``ps -o comm``, ``top``,
``pidof`` and process accounting show): ``steward-jm``, ``steward-tm``, ``steward-runner``
rather than ``python`` for every one of them.

Set by the main thread before it starts others: a thread takes its name from the thread that
made it, and the kernel's name of a process is its main thread's.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

_PR_SET_NAME = 15
_MAX_NAME = 15
"""Bytes the kernel keeps of a name (16 with the terminating zero)."""


def name_this_process(name: str) -> bool:
    """Name the calling thread (the process, when called from its main thread) ``name``, cut
    to 15 bytes; False where the system does not support it."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    except OSError:
        return False
    encoded = name.encode("ascii", "replace")[:_MAX_NAME]
    return bool(libc.prctl(_PR_SET_NAME, ctypes.c_char_p(encoded), 0, 0, 0) == 0)
