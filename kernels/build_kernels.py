"""cffi out-of-line build of gradcheck's native kernels into ``gradcheck._kernels``.

setuptools runs this through ``cffi_modules`` at install time. ``CDEF`` is what Python
(and numba, through cffi) can see; ``SOURCES`` are compiled into the extension.
"""
from __future__ import annotations

import os
import re

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = "gradcheck_abi.h"
# setuptools wants source paths relative to the project root, where builds run.
SOURCES = sorted(
    os.path.join("kernels", name) for name in os.listdir(HERE) if name.endswith(".c")
)


def _cdef_from_header(path: str) -> str:
    """Keep only the prototypes of the header: cffi's cdef takes no preprocessor lines."""
    with open(path) as fh:
        text = fh.read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return "\n".join(lines)


CDEF = _cdef_from_header(os.path.join(HERE, HEADER))

ffibuilder = FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source(
    "gradcheck._kernels",
    f'#include "{HEADER}"',
    sources=SOURCES,
    include_dirs=["kernels"],
    extra_compile_args=["-O2", "-std=c99"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
