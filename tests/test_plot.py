"""Pictures: heat maps of one check and grids of a sweep, written as PNGs and looked at.

Each picture is read back with matplotlib.image.imread: it must exist, have a reasonable
size, hold more than a few colours, and show failing cells in the failure colour and
passing cells in the pass colour, in about the right proportion.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from optional_deps import need

import gradcheck
from gradcheck import grid, shape_sweep
from gradcheck.native import native_function

mpimg = need("matplotlib.image")

from gradcheck._report.plot import FAIL_COLOUR, PASS_COLOUR  # noqa: E402


def rgb(hex_colour: str) -> np.ndarray:
    return np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]) / 255.0


def pixels_of(image: np.ndarray, hex_colour: str, tol: float = 0.02) -> int:
    """How many pixels have (nearly) this colour."""
    return int((np.abs(image[..., :3] - rgb(hex_colour)).max(axis=-1) < tol).sum())


def read_png(path) -> np.ndarray:
    assert path.exists() and path.suffix == ".png"
    assert 8_000 < path.stat().st_size < 3_000_000
    image = mpimg.imread(path)
    assert image.ndim == 3 and min(image.shape[:2]) > 300
    rgb8 = (image[..., :3] * 255).round().astype(np.uint32)
    colours = np.unique(rgb8[..., 0] << 16 | rgb8[..., 1] << 8 | rgb8[..., 2])
    assert len(colours) > 20, "a heat map has more than a few colours"
    return image


def cube_sum(x):
    return (x ** 3).sum()


@pytest.fixture(scope="module")
def failing_report():
    """A 6 x 8 check whose column 2 is wrong: 6 of 48 entries fail."""
    x = np.linspace(0.5, 1.5, 48).reshape(6, 8)

    def grad(x):
        g = 3 * x ** 2
        g[:, 2] *= 1.01
        return g

    return gradcheck.check(cube_sum, x, grad, name="cube, column 2 wrong")


def test_report_heat_map(tmp_path, failing_report):
    """Report.plot writes a PNG whose failing cells are red and passing ones green, in
    the proportion of the verdicts (6 red cells to 42 green)."""
    image = read_png(failing_report.plot(tmp_path / "heat.png"))
    red, green = pixels_of(image, FAIL_COLOUR), pixels_of(image, PASS_COLOUR)
    assert red > 500 and green > 500
    assert 0.08 < red / (red + green) < 0.2  # 6/48 = 0.125, plus the legend swatches


def test_passing_report_has_no_failure_colour(tmp_path):
    """A passing check's heat map has no red at all."""
    r = gradcheck.check(cube_sum, np.linspace(0.5, 1.5, 20).reshape(4, 5), lambda x: 3 * x ** 2)
    image = read_png(r.plot(tmp_path / "pass.png"))
    assert pixels_of(image, FAIL_COLOUR) == 0 and pixels_of(image, PASS_COLOUR) > 1000


@pytest.mark.parametrize("shape", [(7,), (50,), (3, 4, 5)])
def test_report_heat_map_of_other_ranks(tmp_path, shape):
    """1-D vectors wrap into rows, N-D tensors flatten their leading axes: still a PNG."""
    x = np.linspace(0.5, 1.5, int(np.prod(shape))).reshape(shape)

    def grad(x):
        g = 3 * x ** 2
        g.flat[-1] = 0.0
        return g

    r = gradcheck.check(cube_sum, x, grad)
    image = read_png(r.plot(tmp_path / "heat.png"))
    assert pixels_of(image, FAIL_COLOUR) > 0


def test_report_heat_map_by_parts(tmp_path):
    """parts= draws each named piece of a flat input in its own shape: the parity matmul's
    last columns of A and B (8 of 48 cells) are red."""
    shape = (5, 4, 7)
    nf = native_function("matmul_tn", grad="grad_parity", iparams=shape)
    x = np.random.default_rng(1).uniform(0.5, 1.5, 4 * 12)
    r = gradcheck.check(nf, x, nf.gradient)
    image = read_png(r.plot(tmp_path / "parts.png", parts={"A": (4, 5), "B": (4, 7)}))
    red, green = pixels_of(image, FAIL_COLOUR), pixels_of(image, PASS_COLOUR)
    assert 0.1 < red / (red + green) < 0.25  # 8/48 = 0.167


@pytest.fixture(scope="module")
def sweep():
    """n % 4 == 0 fails, over (m, k, n) in 1..3 x 1..2 x 1..8: a quarter of the shapes."""
    def grad(x):
        g = 3 * x ** 2
        if x.shape[2] % 4 == 0:
            g[..., -1] = 0.0
        return g

    return shape_sweep(cube_sum, grid(m=range(1, 4), k=range(1, 3), n=range(1, 9)),
                       lambda s: np.linspace(0.5, 1.5, int(np.prod(s))).reshape(s), grad)


def test_sweep_grid(tmp_path, sweep):
    """SweepReport.plot writes a grid of failing shapes, red in the right proportion."""
    image = read_png(sweep.plot(tmp_path / "sweep.png"))
    red, green = pixels_of(image, FAIL_COLOUR), pixels_of(image, PASS_COLOUR)
    assert 0.18 < red / (red + green) < 0.32  # 12 of 48 shapes


def test_sweep_grid_with_chosen_axes_and_pooling(tmp_path, sweep):
    """rows/cols/panels take names; a dimension left over is pooled into fractions."""
    read_png(sweep.plot(tmp_path / "a.png", rows="k", cols="n", panels="m"))
    read_png(sweep.plot(tmp_path / "b.png", rows="m", cols="n", panels=None))
    with pytest.raises(ValueError, match=r"unknown dimension 'q'.*\('m', 'k', 'n'\)"):
        sweep.plot(tmp_path / "c.png", rows="q")


def test_one_dimensional_sweep_grid(tmp_path):
    """A 1-D sweep is one strip of cells."""
    def grad(x):
        g = 3 * x ** 2
        if x.size % 3 == 0:
            g[0] = 0.0
        return g

    s = shape_sweep(cube_sum, range(1, 13), lambda s: np.linspace(0.5, 1.5, s[0]), grad)
    image = read_png(s.plot(tmp_path / "strip.png"))
    assert pixels_of(image, FAIL_COLOUR) > 0


def test_missing_matplotlib_says_what_to_install(tmp_path):
    """Without matplotlib, plotting raises ImportError naming the extra to install, and
    importing gradcheck (and its sweep) still works."""
    code = textwrap.dedent(f"""
        import sys
        sys.modules["matplotlib"] = None  # import matplotlib now raises ImportError
        import numpy as np, gradcheck
        r = gradcheck.check(lambda x: (x ** 2).sum(), np.ones(3), lambda x: 2 * x)
        try:
            r.plot({str(tmp_path / "x.png")!r})
        except ImportError as exc:
            print(exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert 'pip install "gradcheck[plot]"' in out.stdout

