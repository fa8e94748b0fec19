# cffi's build hook is a setup() keyword, which pyproject.toml cannot carry; every other piece
# of metadata lives in pyproject.toml.
from setuptools import setup

setup(cffi_modules=["kernels/build_kernels.py:ffibuilder"])
