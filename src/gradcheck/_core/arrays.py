"""Small array helpers every stage shares.

``same_bits`` is the one meaning of "the array is unchanged" in gradcheck: the same bytes.
A comparison by value (``np.array_equal``, even with ``equal_nan=True``) misses an ``f``
that writes ``-0.0`` over ``0.0`` or changes a NaN's payload.
"""
from __future__ import annotations

from typing import Any

import numpy as np


def same_bits(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` have the same dtype and shape and hold the same bytes.

    Signed zeros and NaN payloads count: ``-0.0`` is not ``0.0`` here.

    >>> import numpy as np
    >>> same_bits(np.array([0.0, np.nan]), np.array([0.0, np.nan]))
    True
    >>> same_bits(np.array([0.0]), np.array([-0.0]))
    False
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.hasobject or not a.dtype.itemsize or not (a.flags.c_contiguous and b.flags.c_contiguous):
        return a.tobytes() == b.tobytes()
    # The same bytes, compared a block at a time (tobytes would copy both arrays whole).
    bytes_a, bytes_b = a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8)
    return all(np.array_equal(bytes_a[i:i + _BLOCK], bytes_b[i:i + _BLOCK]) for i in range(0, bytes_a.size, _BLOCK))


def bits_differ(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per entry of two arrays of one dtype and shape: True where their bits differ (the
    entry-wise :func:`same_bits`: ``-0.0`` is not ``0.0``, another NaN payload differs).

    >>> bits_differ(np.array([0.0, np.nan, 1.0]), np.array([-0.0, np.nan, 1.0])).tolist()
    [True, False, False]
    >>> bits_differ(np.array([1j, 2j]), np.array([complex(-0.0, 1.0), 2j])).tolist()  # 16-byte items
    [True, False]
    """
    a, b = np.asarray(a, order="C"), np.asarray(b, order="C")
    size = a.dtype.itemsize
    if size in (1, 2, 4, 8):
        return a.view(f"u{size}") != b.view(f"u{size}")
    rows = (x.reshape(-1).view(np.uint8).reshape(-1, size) for x in (a, b))  # any item size (complex128)
    return np.not_equal(*rows).any(axis=1).reshape(a.shape)


#: Bytes compared per block by :func:`same_bits`.
_BLOCK = 1 << 19
