"""``gradcheck demo`` and ``gradcheck bench``: what the command line runs to show the product.

``showcases`` holds the demo's checks whose right outcome is known (planted bugs caught,
correct claims passed, disputes settled); ``bench`` runs the benchmark scripts of a source
checkout. In: nothing. Out: text, JSON, pictures.
It ranks at the top (it uses every feature); nothing but ``cli.py`` imports it.
"""
