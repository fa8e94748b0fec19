"""describe_layout: where the failing entries of a tensor sit, in exact words."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradcheck._report.layout import describe_layout


def mask(shape, *where) -> np.ndarray:
    """A False array of ``shape`` with True at each index expression in ``where``."""
    m = np.zeros(shape, bool)
    for w in where:
        m[w] = True
    return m


S = np.s_
CASES = [
    # (id, mask, kind, text)
    ("none", mask((4, 5)), "none", "none"),
    ("all", ~mask((4, 5)), "all", "every entry"),
    ("scalar-true", np.array(True), "all", "every entry"),
    ("scalar-false", np.array(False), "none", "none"),
    ("single", mask((4, 5), (2, 3)), "single", "a single entry at (2, 3)"),
    ("row", mask((4, 5), S[2]), "row", "row 2"),
    ("two-rows", mask((5, 5), S[[1, 3]]), "row", "rows 1 and 3"),
    ("last-row", mask((4, 5), S[-1]), "row", "the last row (row 3)"),
    ("row-run", mask((6, 3), S[1:4]), "row", "rows 1–3"),
    ("column", mask((4, 6), S[:, 4]), "column", "column 4"),
    ("last-column", mask((4, 6), S[:, -1]), "column", "the last column (column 5)"),
    ("even-rows", mask((6, 4), S[::2]), "parity", "even rows"),
    ("odd-columns", mask((3, 7), S[:, 1::2]), "parity", "odd columns"),
    ("stride", mask((12, 2), S[1::4]), "stride", "every 4th row from row 1"),
    ("late-start-is-no-parity", mask((8, 2), S[3::2]), "row", "rows 3, 5 and 7"),
    ("block", mask((6, 6), S[2:5, 1:4]), "block", "a block rows 2–4 × columns 1–3"),
    ("grid", mask((6, 6), S[1::2, [0, 5]]), "product", "a grid of odd rows × columns 0 and 5"),
    ("diagonal", np.eye(5, dtype=bool), "diagonal", "the main diagonal"),
    ("off-diagonal", np.eye(4, 5, -1, dtype=bool), "diagonal", "the diagonal 1 below the main one"),
    ("anti-diagonal", np.eye(4, dtype=bool)[:, ::-1], "diagonal", "the anti-diagonal"),
    ("all-but-diagonal", ~np.eye(4, dtype=bool), "except", "every entry except the main diagonal"),
    ("all-but-one", ~mask((3, 4), (1, 2)), "except", "every entry except (1, 2)"),
    ("all-but-block", ~mask((5, 5), S[1:3, 1:3]), "except",
     "every entry except a block rows 1–2 × columns 1–2"),
    ("scattered", mask((8, 8), (0, 1), (3, 5), (6, 2), (7, 7), (2, 0)), "scattered",
     "scattered: 5 of 64 entries"),
    ("vec-two", mask(10, S[[3, 5]]), "entries", "entries 3 and 5"),
    ("vec-one", mask(10, 4), "single", "entry 4"),
    ("vec-last", mask(10, -1), "single", "the last entry (entry 9)"),
    ("vec-even", mask(9, S[::2]), "parity", "even entries"),
    ("vec-run", mask(12, S[4:10]), "run", "a run of entries 4–9"),
    ("vec-all-but-one", ~mask(8, 3), "except", "every entry except entry 3"),
    ("vec-scattered", mask(20, S[[0, 1, 5, 9, 10, 13, 17, 18]]), "scattered",
     "scattered: 8 of 20 entries"),
    ("nd-slice", mask((3, 4, 5), S[:, 2]), "slice", "index 2 along axis 1"),
    ("nd-last", mask((3, 4, 5), S[..., -1]), "slice", "the last index along axis 2 (index 4)"),
    ("nd-parity", mask((6, 2, 3), S[::2]), "parity", "even indices along axis 0"),
    ("nd-block", mask((3, 4, 5), S[1:3, :, 2:4]), "block",
     "a block indices 1–2 along axis 0 × indices 2–3 along axis 2"),
    # issue 27: a pattern and a stray entry are named, not "scattered: 65 of 4096 entries"
    ("column-and-stray", mask((64, 64), S[:, 5], (10, 20)), "plus", "column 5 and one entry (10, 20)"),
    ("row-and-column", mask((16, 17), S[3], S[:, 5]), "plus", "row 3 and column 5"),
    ("block-and-two-strays", mask((16, 16), S[2:5, 1:4], (10, 12), (14, 0)), "plus",
     "a block rows 2–4 × columns 1–3 and entries (10, 12) and (14, 0)"),
    ("vec-run-and-stray", mask(20, S[4:10], 15), "plus", "a run of entries 4–9 and entry 15"),
    ("nd-slice-and-stray", mask((3, 4, 5), S[:, 2], (0, 0, 0)), "plus",
     "index 2 along axis 1 and one entry (0, 0, 0)"),
    ("all-but-column-and-stray", ~mask((8, 8), S[:, 5], (1, 2)), "except",
     "every entry except column 5 and one entry (1, 2)"),
    ("too-many-strays-are-scattered", mask((16, 16), S[:, 5], (1, 2), (3, 9), (7, 11), (12, 14)),
     "scattered", "scattered: 20 of 256 entries"),
]


@pytest.mark.parametrize(("m", "kind", "text"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_mask_is_described_by_kind_and_text(m, kind, text):
    """Each layout in the table gets its kind and its wording."""
    d = describe_layout(m)
    assert (d.kind, d.text, str(d)) == (kind, text, text)


def test_many_whole_rows_are_summarised_with_an_exact_count():
    """Over six irregular rows: the count is stated and the full list kept in details."""
    rows = [0, 2, 3, 7, 8, 10, 11, 14]  # the other eight rows are no simpler
    d = describe_layout(mask((16, 3), S[rows]))
    assert (d.kind, d.text) == ("row", "8 rows (0, 2, 3, 7, 8, …)")
    assert d.details["indices"] == tuple(rows)


def test_scattered_details_count_and_sample_the_mask():
    """A scattered description is inexact, so its details say how many and show where."""
    m = np.random.default_rng(0).random((16, 16)) < 0.2
    d = describe_layout(m)
    assert d.kind == "scattered"
    assert d.details["count"] == int(m.sum()) and len(d.details["examples"]) == 10
    assert all(m[ix] for ix in d.details["examples"])


@pytest.mark.parametrize(
    ("m", "kind"),
    [(np.array([0, 1, 1, 0]), "run"), (np.array([[1, 0], [1, 0]], dtype=np.int8), "column")],
    ids=["int-vector", "int8-matrix"],
)
def test_zero_one_arrays_are_accepted_as_masks(m, kind):
    """0/1 integer arrays are read as masks."""
    assert describe_layout(m).kind == kind


def test_non_boolean_values_are_rejected():
    """An array that is not a mask (values other than 0/1) raises TypeError."""
    with pytest.raises(TypeError):
        describe_layout(np.array([0.5, 1.0]))


def rebuild(details: dict, kind: str) -> np.ndarray:
    """The set a description claims, rebuilt from its documented details only."""
    shape = details["shape"]
    out = np.zeros(shape, bool)
    if kind == "all":
        out[...] = True
    elif kind == "single":
        out[details["index"]] = True
    elif kind in ("row", "column", "slice", "entries", "run", "parity", "stride"):
        axis, idx = details["axis"], list(details["indices"])
        n = shape[axis]
        if kind == "parity":
            assert idx == list(range(("even", "odd").index(details["parity"]), n, 2))
        if kind == "stride":
            assert idx == list(range(details["offset"], n, details["step"]))
        if kind == "run":
            assert idx == list(range(idx[0], idx[-1] + 1))
        out[(slice(None),) * axis + (idx,)] = True
    elif kind == "block":
        out[tuple(slice(a, b) for a, b in zip(details["start"], details["stop"]))] = True
    elif kind == "product":
        out[np.ix_(*details["index_sets"])] = True
    elif kind == "diagonal":
        eye = np.eye(shape[0], shape[1], details["offset"], dtype=bool)
        out = eye[:, ::-1] if details["anti"] else eye
    elif kind == "except":
        out = ~rebuild({"shape": shape, **details["except"]}, details["except_kind"])
    elif kind == "plus":
        for part in details["parts"]:
            out |= rebuild({"shape": shape, **part}, part["kind"])
        for ix in details["entries"]:
            out[tuple(ix)] = True
    else:
        assert kind == "none", kind
    return out


def index_set(n: int):
    """Any subset of range(n), or a periodic one (parities, strides, runs)."""
    periodic = st.builds(lambda a, step: list(range(a % n, n, step)),
                         st.integers(0, 6), st.integers(1, 4))
    return st.one_of(st.sets(st.integers(0, n - 1)).map(sorted), periodic)


@st.composite
def masks(draw):
    """Random masks, biased towards structure so every kind gets exercised."""
    shape = tuple(draw(st.lists(st.integers(1, 7), min_size=0, max_size=3)))
    size = int(np.prod(shape))
    style = draw(st.sampled_from(["random", "product", "diagonal", "strays"]))
    if style == "strays":
        m = np.zeros(shape, bool)
        if size:
            m[np.ix_(*[draw(index_set(n)) for n in shape])] = True
            for flat in draw(st.lists(st.integers(0, size - 1), max_size=3)):
                m.reshape(-1)[flat] = True
    elif style == "random":
        bits = draw(st.lists(st.booleans(), min_size=size, max_size=size))
        m = np.array(bits, bool).reshape(shape)
    elif style == "diagonal" and len(shape) == 2:
        m = np.eye(*shape, draw(st.integers(-shape[0] + 1, shape[1] - 1)), dtype=bool)
        m = m[:, ::-1] if draw(st.booleans()) else m
    else:
        m = np.zeros(shape, bool)
        m[np.ix_(*[draw(index_set(n)) for n in shape])] = True
    return ~m if draw(st.booleans()) else m


@given(m=masks())
def test_non_scattered_details_rebuild_exactly_the_mask(m):
    """Every description but "scattered" is exact: its details rebuild the mask."""
    d = describe_layout(m)
    json.dumps(d.details)  # plain Python values, ready for a JSON report
    assert d.details["count"] == int(m.sum())
    if d.kind != "scattered":
        assert np.array_equal(rebuild(d.details, d.kind), m), d.text
    if "index_sets" in d.details:
        assert np.array_equal(rebuild(d.details, "product"), m), d.text
