# cffi's build hook is a setup() keyword, which setup.cfg cannot carry; the rest of the
# metadata lives in setup.cfg and pyproject.toml.
from setuptools import setup

setup(cffi_modules=["kernels/build_kernels.py:ffibuilder"])
