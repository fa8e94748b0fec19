"""``gradcheck demo`` and ``gradcheck bench``: what the command line runs to show the product.

``showcases`` holds the demo's checks whose right outcome is known (planted bugs caught,
correct claims passed, disputes settled); ``dispute_showcases`` the gradient and timed
disputes; ``layernorm`` the precision-generic layer norm of the float32 showcase (also used
by the tolerance study and the tests); the showcases of forward mode, second order, the
adjoint and Taylor tests live with them in ``orders_showcases``. ``bench`` runs
the benchmark scripts of a source checkout. In: nothing. Out: text, JSON, pictures.
It ranks at the top (it uses every feature); nothing but ``cli.py`` imports it.
"""
