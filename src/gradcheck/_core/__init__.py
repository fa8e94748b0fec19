"""The vocabulary every stage shares (rank 0).

In: nothing from gradcheck. Out: the errors and the one mutation message (``errors``), the
configuration and unit round-offs (``config``), the one tolerance formula and PASS share rule
(``tolerance``), the verdicts and their causes (``verdict``), the overall status rule
(``status``), validation of user arguments and the one label rule (``arguments``), of a
callable claim's call and writes (``claims``) and of inputs and outputs (``inputs``), ``same_bits``, the one meaning of "unchanged" (``arrays``), exact
rounding to float formats and ulps (``formats``), the numba policy (``jit``: kernels
compiled on first use), and ``Judged`` (``judged``: the verdicts so far and how each was
reached, what classify, refine and adjudicate pass along).
Must not import: any other part of gradcheck, nor anything heavy at import time (numba,
mpmath and ml_dtypes are imported inside the functions that need them).
"""
