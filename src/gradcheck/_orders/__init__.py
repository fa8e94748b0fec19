"""Beyond first-order reverse mode: forward-mode claims, the adjoint (dot-product) test,
second order, the Taylor test, and complex inputs.

What comes in: a function and a claim about one of its derivatives (a JVP, a VJP/JVP
pair, a Hessian-vector product, a gradient judged by its Taylor remainder, a gradient of
a function of complex numbers). What goes out: a :class:`~gradcheck.Report` where the
question is "which entries are wrong" (``check_jvp``, ``check_hvp``, complex ``check``),
or a small result with the same answers (``.passed``, ``.assert_pass()``, ``str()``,
``.to_dict()``) where the question is global (``check_adjoint``, ``taylor_test``).

Every entry-wise check here is the ordinary ``check`` pipeline with the claim built
differently (``gradcheck._pipeline.claims.ClaimBackend``), so verdicts, tolerance, step
study and referee are the ones ``check`` uses. The only module that imports gradcheck's
internals is ``_links``; the modules:

* ``_jvp``      ``check_jvp``: the claim ``v . J e_i`` from N (batched) JVPs
* ``_adjoint``  ``check_adjoint``: ``<J t, v> = <t, J^T v>`` with a stated round-off bound
* ``_hvp``      ``check_hvp``: the gradient map's VJP, plus the symmetric-Hessian test
* ``_taylor``   ``taylor_test``: remainders at halving steps, observed orders
  (``_taylor_plot``: its log-log picture, the only matplotlib importer here)
* ``_complex``  complex inputs and outputs in all four: check's convention, the real inner
  product ``Re sum(conj(a) b)``, complex directions and cotangents (never a cast)
* ``_result``   what the small results share (``passed``, ``assert_pass``, JSON)
* ``_cli``, ``_plugin``: the command line and the pytest fixture's methods of this feature
  (its ``gradcheck demo`` showcases are ``gradcheck._demo.orders_showcases``)

Elsewhere: complex inputs and outputs are part of ``check`` itself
(``gradcheck._pipeline.complex``, with ``ClaimBackend`` in ``gradcheck._pipeline.claims``);
the negative controls of these kinds are ``gradcheck._controls.kinds``
(``assert_detects_wrong_gradient(kind=...)``); the torch and jax adapters have ``jvp`` and ``hvp``;
``cli.py`` and ``pytest_plugin.py`` call into ``_cli`` and ``_plugin``; the public names are re-exported by ``gradcheck/__init__.py``. Everything
outside this package enters through the names below (tests/test_layers.py, rule 4).

Must not import: the other features, the negative controls, the demo, the command line
(matplotlib only inside ``_taylor_plot``'s functions).
"""
from ._adjoint import AdjointResult as AdjointResult
from ._adjoint import check_adjoint as check_adjoint
from ._cli import add_check_options as add_check_options
from ._cli import add_taylor_parser as add_taylor_parser
from ._cli import check_orders as check_orders
from ._hvp import _claim as hvp_claim
from ._hvp import check_hvp as check_hvp
from ._hvp import symmetric_hessian as symmetric_hessian
from ._jvp import check_jvp as check_jvp
from ._plugin import OrdersFixtureMixin as OrdersFixtureMixin
from ._taylor import TaylorResult as TaylorResult
from ._taylor import taylor_test as taylor_test

__all__ = ["AdjointResult", "OrdersFixtureMixin", "TaylorResult", "add_check_options", "add_taylor_parser",
           "check_adjoint", "check_hvp", "check_jvp", "check_orders", "hvp_claim",
           "symmetric_hessian", "taylor_test"]
