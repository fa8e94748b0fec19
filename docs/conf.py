"""Sphinx configuration of gradcheck's documentation.

Build (from the repository root, after ``pip install ".[docs]"``)::

    sphinx-build -W -j auto -b html docs docs/_build/html

The build documents the *installed* gradcheck (no path is added here: a source checkout has no
compiled kernels until it is installed). The MyST pages and notebooks marked as executable run
at every build, in a fresh kernel each, and a cell that raises fails the build.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import gradcheck

# The executed pages multiply small matrices; OpenBLAS's threads only add contention there, and
# on a loaded 2-core machine they made a page 9x slower (18 s instead of 2 s). The kernels that
# run the pages inherit this.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

project = "gradcheck"
author = "the gradcheck developers"
copyright = "the gradcheck developers"
release = gradcheck.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "myst_nb",                 # MyST markdown + notebooks executed at build (includes myst_parser)
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx.ext.mathjax",
    "gradcheck_docs",          # _ext/: the CLI's and the pytest plugin's --help, generated at build
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
# peers_orders.md is written by benchmarks/peers_orders.py (a table without a title): it is
# included into the pages that show it, not a page of its own.
exclude_patterns = ["_build", "_generated", "jupyter_execute", "**.ipynb_checkpoints", "_templates",
                    "peers_orders.md"]
templates_path = ["_templates"]

# --- MyST and execution -----------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "dollarmath", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "force"          # every executable page runs at every build: nothing cached
nb_execution_raise_on_error = True   # a cell that raises fails the build
nb_execution_show_tb = True
nb_execution_timeout = 300
nb_execution_in_temp = True          # files a page writes (reports, npz) land in a temp folder
nb_merge_streams = True

# --- API reference --------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"           # the numpydoc sections state the types
autodoc_member_order = "bysource"
numpydoc_show_class_members = False  # the class template lists the members (autodoc)
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# --- HTML -----------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"gradcheck {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path: list[str] = []
