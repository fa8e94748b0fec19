"""The negative controls: before trusting a verdict, prove the instrument catches a planted error.

In: a backend (and an engine, a config, a kind of claim). Out: nothing, or a
``GradientAssertionError`` that says which direction failed (a corrupted claim not flagged at
exactly its entries, or a correct claim not passed). ``control`` holds
``assert_detects_wrong_gradient`` (the gradient through ``check``), ``kinds`` the controls of
the other kinds of claim (``check_jvp``, ``check_hvp``, ``check_adjoint``, ``taylor_test``,
complex ``check``), ``corrupt`` the planted error.
It ranks above the features (it runs every kind of check); nothing but the top (the package
root, the pytest plugin, the demo) imports it.
Must not import: the demo, the command line, the pytest plugin.
"""
