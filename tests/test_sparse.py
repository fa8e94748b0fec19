"""The second look's values stored sparsely (issue 16, item 2: memory).

``SparseColumn`` is checked against a dense numpy array given the same writes (repeated
positions, masks, resets, NaN payloads: bit for bit); a report keeps only the set entries and
materialises ``exact``/``left``/``right`` when read; and a check's second look gives the
closed-form exact value at a planted bug and the one-sided slopes at a kink, NaN elsewhere.
"""
from __future__ import annotations

import dataclasses
import tracemalloc

import mpmath
import numpy as np
import pytest

from gradcheck import Cause, Report, Verdict, check
from gradcheck._core.judged import Judged
from gradcheck._core.sparse import SparseColumn


def bits(a) -> np.ndarray:
    """An array's bytes per entry (NaN payloads and signed zeros told apart)."""
    a = np.ascontiguousarray(a)
    return a.view(np.uint8).reshape(a.size, a.dtype.itemsize)


def same(col: SparseColumn, dense: np.ndarray) -> bool:
    full = col.full()
    return full.shape == dense.shape and full.dtype == dense.dtype and np.array_equal(bits(full), bits(dense))


def test_writes_and_reads_match_a_dense_array():
    """Random writes (integer positions with repeats and negatives, masks, slices, one entry,
    resets) and reads, each on a column and on a dense reference: the same bits every time."""
    rng = np.random.default_rng(5)
    n = 40
    col, dense = SparseColumn(n), np.full(n, np.nan)
    other_nan = -np.float64(np.nan)  # a NaN whose bits differ from the fill's: kept, not dropped
    for step in range(300):
        kind = step % 6
        values = rng.standard_normal(8)
        values[rng.random(8) < 0.2] = np.nan
        values[rng.random(8) < 0.1] = other_nan
        if kind == 0:  # positions with repeats and negative positions: the last write wins
            p = rng.integers(-n, n, 8)
            col[p], dense[p] = values, values
        elif kind == 1:
            mask = rng.random(n) < 0.2
            v = rng.standard_normal(int(mask.sum()))
            col[mask], dense[mask] = v, v
        elif kind == 2:
            j = int(rng.integers(-n, n))
            col[j], dense[j] = values[0], values[0]
        elif kind == 3 and step % 36 == 3:
            col[:], dense[:] = np.nan, np.nan
        elif kind == 3:
            s = slice(int(rng.integers(0, n)), int(rng.integers(0, n)), int(rng.integers(1, 4)))
            col[s], dense[s] = np.nan, np.nan
        elif kind == 4:
            s = slice(3, 30, 7)
            col[s], dense[s] = 2.5, 2.5
        else:
            p = rng.integers(0, n, 6)
            col[p], dense[p] = 1.0, 1.0  # one value broadcast
        assert same(col, dense), step
        p = rng.integers(-n, n, 10)
        assert np.array_equal(bits(col[p]), bits(dense[p]))
        mask = rng.random(n) < 0.5
        assert np.array_equal(bits(col[mask]), bits(dense[mask]))
        assert np.array_equal(bits(col[5:17:3]), bits(dense[5:17:3]))
        assert bits(np.array([col[7]])).tobytes() == bits(np.array([dense[7]])).tobytes()
        assert col.count == int((bits(dense) != bits(np.array([np.nan]))).any(axis=1).sum())
    assert np.array_equal(bits(np.asarray(col)), bits(dense)) and np.asarray(col, dtype=np.float32).dtype == np.float32


def test_positions_values_and_errors():
    """Sorted positions with their values; fills are never stored; bad keys are refused."""
    col = SparseColumn(10)
    col[np.array([7, 2, 7, 5])] = [1.0, 2.0, 3.0, np.nan]
    assert col.positions.tolist() == [2, 7] and col.values.tolist() == [2.0, 3.0]
    with pytest.raises(ValueError):
        col.values[0] = 9.0  # read-only views: the store is written through the column only
    assert col.finite_positions().tolist() == [2, 7]
    col[np.array([], dtype=np.int64)] = []
    assert col.count == 2
    with pytest.raises(IndexError, match="out of bounds"):
        col[np.array([10])] = 1.0
    with pytest.raises(IndexError, match="out of bounds"):
        col.take([-11])
    with pytest.raises(IndexError, match="integers"):
        col[np.array([1.0])]
    with pytest.raises(IndexError, match="boolean key"):
        col[np.ones(3, dtype=bool)]


def test_shaped_column_multi_index_mask_reshape():
    """A column shaped like x: multi-index tuples (negative too), masks of its shape, flat
    reads through take(); reshape keeps the entries; a bare integer key is refused."""
    dense = np.full((3, 4), np.nan)
    col = SparseColumn((3, 4))
    col[(1, 2)], dense[1, 2] = 5.0, 5.0
    col[(-1, -1)], dense[-1, -1] = 7.0, 7.0
    mask = np.zeros((3, 4), dtype=bool)
    mask[0, ::2] = True
    col[mask], dense[mask] = [1.0, 2.0], [1.0, 2.0]
    assert same(col, dense) and col[2, 3] == 7.0 and np.isnan(col[0, 1])
    assert np.array_equal(bits(col.take(np.arange(12))), bits(dense.reshape(-1)))
    assert same(col.reshape(12), dense.reshape(12)) and same(col.reshape(4, 3), dense.reshape(4, 3))
    with pytest.raises(IndexError, match="multi-index"):
        col[np.array([1, 2])]
    with pytest.raises(IndexError, match="out of bounds"):
        col[(3, 0)]
    with pytest.raises(ValueError, match="reshape"):
        col.reshape(5)


def test_complex_column():
    """Any dtype and fill: a complex column with a complex NaN fill."""
    fill = np.complex128(complex(np.nan, np.nan))
    col = SparseColumn.from_entries((2, 2), [3, 0], np.array([1 + 2j, 3 - 1j]), fill=fill)
    dense = np.full((2, 2), fill)
    dense.reshape(-1)[[3, 0]] = [1 + 2j, 3 - 1j]
    assert col.dtype == np.complex128 and same(col, dense) and col[1, 1] == 1 + 2j


def test_from_dense_keeps_every_entry_that_is_not_the_fill():
    """A dense array back to a column: the entries whose bits differ from the fill (another
    NaN, -0.0) are kept, and the column gives back the same bits."""
    dense = np.full((3, 5), np.nan)
    dense[0, 1], dense[2, 4], dense[1, 0] = 1.5, -np.float64(np.nan), -0.0
    col = SparseColumn.from_dense(dense)
    assert col.count == 3 and col.shape == (3, 5) and same(col, dense)
    zeros = SparseColumn.from_dense(np.array([0.0, 2.0, -0.0]), fill=0.0)
    assert zeros.positions.tolist() == [1, 2] and same(zeros, np.array([0.0, 2.0, -0.0]))


def test_report_stores_sparsely_and_materialises_on_read():
    """Report(exact=dense) keeps only the measured entries and gives back the same bits;
    a copy (dataclasses.replace) keeps them; nothing recorded reads as None."""
    r = check(lambda x: np.sin(x).sum(), np.array([[0.5, -1.0], [2.0, 0.1]]), grad=np.cos, adjudicate=False)
    exact = np.full((2, 2), np.nan)
    exact[1, 0] = 0.25
    values = {f.name: getattr(r, f.name) for f in dataclasses.fields(r) if f.name != "measured"}
    built = Report(**values, exact=exact, left=np.full((2, 2), np.nan))
    assert built.measured["exact"].count == 1 and built.measured["left"].count == 0
    assert np.array_equal(bits(built.exact), bits(exact)) and built.right is None
    assert built.exact is not built.exact  # a new array at each read: the store stays sparse
    assert built.measured_at("exact", (1, 0)) == 0.25 and np.isnan(built.measured_at("right", (1, 0)))
    copy = dataclasses.replace(built, notes=("n",))
    assert np.array_equal(bits(copy.exact), bits(exact))


def test_second_look_builds_no_array_of_the_report_size():
    """Judged.second_look of a large judged set holds the suspects' values only."""
    n = 1_000_000
    judged = Judged(np.zeros(3), np.zeros(3), np.zeros(3, np.uint8), np.zeros(3, bool), 0, np.zeros(3, np.uint8),
                    SparseColumn(3), np.full(3, -1, np.int16), SparseColumn(3), SparseColumn(3))
    judged.exact[np.array([0, 2])] = [1.5, -2.5]
    positions = np.array([10, 500_000, n - 1])
    tracemalloc.start()
    out = judged.second_look((1000, 1000), positions)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 3.5 * n  # the dense uint8 causes and int16 digits: 3 bytes an entry, no float64 array
    assert out["measured"]["exact"].positions.tolist() == [10, n - 1]
    full = out["measured"]["exact"].full()
    assert full[0, 10] == 1.5 and full[-1, -1] == -2.5 and np.isnan(full).sum() == n - 2


def test_check_exact_and_slopes_are_the_closed_forms_and_nan_elsewhere():
    """A planted bug: the referee's exact value is cos(x) + 1 rounded (mpmath, 40 digits); the
    kinks of relu at 0 have one-sided slopes cos(0) + 0 and cos(0) + 1; every other entry reads
    NaN (not measured), in the arrays, the JSON, the text and the HTML."""
    x = np.array([0.3, 0.0, -1.2, 0.7, 0.0, 2.0])
    bug = 3
    f = lambda x: (np.sin(x) + np.maximum(x, 0.0)).sum()  # noqa: E731
    grad = lambda x: np.cos(x) + (x > 0) + 1e-3 * (np.arange(x.size) == bug)  # noqa: E731
    r = check(f, x, grad)
    assert r.entries(Verdict.MISMATCH) == [(bug,)] and r.cause((bug,)) is Cause.EXACT, str(r)
    assert set(r.entries(Verdict.KINK)) == {(1,), (4,)}, str(r)
    with mpmath.workdps(40):
        truth = float(mpmath.cos(mpmath.mpf(x[bug])) + 1)
    expected = np.full(x.shape, np.nan)
    expected[bug] = truth
    assert np.array_equal(bits(r.exact[[bug]]), bits(expected[[bug]]))
    measured = np.isfinite(r.exact)
    assert measured[bug] and not measured[[0, 2, 5]].any()  # entries that were not in doubt
    for kink in (1, 4):
        assert (r.left[kink], r.right[kink]) == (1.0, 2.0)
    assert np.isnan(r.left[[0, 2, 5]]).all() and np.isnan(r.right[[0, 2, 5]]).all()
    entry = next(e for e in r.to_dict()["entries"] if e["index"] == [bug])
    assert entry["exact"] == truth and entry["certified_digits"] == int(r.digits[bug])
    assert f"exact {truth:.17g}" in r.explain((bug,))
    assert f"{truth:.17g}" in r.to_html()


@pytest.mark.parametrize("convention, sign", [("torch", 1.0), ("jax", -1.0)])
def test_complex_report_combines_the_parts_columns(convention, sign):
    """A complex check with a bug in one imaginary part: only that part is refereed; the
    complex report's exact value is re + i*sign*im of its parts' entry by entry (NaN bits
    included) and the imaginary part is the closed form's, 2 W^H W z."""
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((4, 5)) + 1j * rng.standard_normal((4, 5))) / 2
    z = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    g = 2 * w.conj().T @ (w @ z)
    bad = g.copy()
    bad[2] += 1e-3 * abs(g[2]) * 1j
    r = check(lambda z: np.sum(np.abs(w @ z) ** 2), z, bad if sign > 0 else np.conj(bad),
              complex_convention=convention)
    assert r.entries(Verdict.MISMATCH) == [(2,)]
    parts = r.parts.exact
    assert np.isfinite(parts).tolist() == [[False, False]] * 2 + [[False, True]] + [[False, False]] * 2
    assert parts[2, 1] == pytest.approx(g[2].imag, rel=1e-13)
    assert same(r.measured["exact"], parts[..., 0] + 1j * sign * parts[..., 1])
    assert r.measured["exact"].count == 1 and r.exact[2].imag == sign * parts[2, 1]
