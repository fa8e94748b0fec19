"""Speed claims that used to be assertions in tests/ (issue 24: a test never asserts a
duration; on a busy machine it fails for the machine's sake). Each claim is timed here
beside a baseline measured in the same run, interleaved, and printed with its old bound:

* ``import gradcheck`` vs ``import numpy``, each in a fresh interpreter (the test now checks
  *which* modules the import loads: tests/test_public_api.py);
* ``check_adjoint`` on 10^5-entry operators (a correct and a transposed-wrong pair) vs one
  application of the operator and its adjoint (was: under 1 s, tests/test_adjoint.py);
* one entry of a 193-parameter MLP at 30 digits (``mp_derivative``) vs its 10 evaluations
  in float64 (was: under 1 s, tests/test_mp.py);
* ``find_shape_rule`` on all 512 shapes in 1..8 cubed vs on 64 of them (was: under 0.25 s,
  tests/test_pattern.py);
* the HTML page of a 1024 x 1024 report vs that of a 32 x 32 one (was: under 20 s,
  tests/test_html.py), and Chromium opening it vs opening the small one (was: under 60 s,
  tests/test_html_browser.py; skipped without chromium).

    python benchmarks/bench_speed_claims.py [--quick]
"""
from __future__ import annotations

import itertools
import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from _common import compare, header, run, seconds, table

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))  # html_subjects

#: The bounds the tests asserted (seconds), for the table.
OLD_BOUNDS = {"import": 1.5, "adjoint": 1.0, "mp entry": 1.0, "shape rule": 0.25, "html": 20.0, "browser": 60.0}


def _python(code: str) -> None:
    subprocess.run([sys.executable, "-c", code], check=True)


def _adjoint_case():
    from gradcheck import check_adjoint

    kernel = np.random.default_rng(2).standard_normal(9)
    jvp = lambda t: np.convolve(t, kernel, mode="full")  # noqa: E731
    vjp = lambda v: np.correlate(v, kernel, mode="valid")  # noqa: E731
    wrong = lambda v: np.convolve(v, kernel, mode="valid")  # noqa: E731
    t, v = np.ones(100_000), np.ones(100_008)
    return (lambda: (check_adjoint(jvp, vjp, in_shape=(100_000,)), check_adjoint(jvp, wrong, in_shape=(100_000,))),
            lambda: (jvp(t), vjp(v)))


def _mp_case():
    from gradcheck.mp import mp_derivative

    rng = np.random.default_rng(0)
    x, y, theta = rng.normal(size=(8, 10)), rng.normal(size=8), rng.normal(size=193) * 0.3

    def loss(p):
        out = np.tanh(x @ p[:160].reshape(10, 16) + p[160:176]) @ p[176:192] + p[192]
        return np.mean((out - y) ** 2)

    return (lambda: mp_derivative(loss, theta, 165, dps=30)), (lambda: [loss(theta) for _ in range(10)])


def _shape_rule_case():
    from gradcheck._sweeps.pattern import find_shape_rule

    shapes = list(itertools.product(range(1, 9), repeat=3))
    failed = np.random.default_rng(1).random(len(shapes)) < 0.2
    small = list(itertools.product(range(1, 5), repeat=3))
    return (lambda: find_shape_rule(shapes, failed)), (lambda: find_shape_rule(small, failed[:len(small)]))


def _small_report():
    import gradcheck

    x = np.random.default_rng(0).standard_normal((32, 32))
    return gradcheck.check(lambda v: float((v ** 2).sum()), x, lambda v: 2 * v)


def _browser_case(big_page: pathlib.Path, small_page: pathlib.Path, folder: pathlib.Path):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        return None
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
    counter = itertools.count()

    def open_page(page):
        profile = folder / f"profile-{next(counter)}"
        subprocess.run([exe, *flags, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
                       capture_output=True, check=True, timeout=300)

    return (lambda: open_page(big_page)), (lambda: open_page(small_page))


def main(quick: bool = False) -> dict:
    header("speed claims moved out of tests/ (issue 24), each beside a baseline of the same run", quick,
           "repeats (best of 2 instead of 5; the imports once each, without a warm-up run: this process has "
           "imported both already, their files are read), Chromium's warm-up on the big page (one warm-up, on "
           "the small page)")
    repeat = 2 if quick else 5
    from html_subjects import big_report

    cases = {
        "import": ((lambda: _python("import gradcheck")), (lambda: _python("import numpy")),
                   "import gradcheck", "import numpy"),
        "adjoint": (*_adjoint_case(), "check_adjoint x2, 1e5 entries", "J t and J^T v once"),
        "mp entry": (*_mp_case(), "mp_derivative, 30 digits", "10 float64 evaluations"),
        "shape rule": (*_shape_rule_case(), "find_shape_rule, 512 shapes", "64 shapes"),
    }
    big, small = big_report(unchecked=100_000), _small_report()
    pages: dict[str, str] = {}  # the timed renders, written for the browser case (not rendered again)
    cases["html"] = ((lambda: pages.__setitem__("big", big.to_html())),
                     (lambda: pages.__setitem__("small", small.to_html())), "to_html 1024x1024", "to_html 32x32")
    results, rows = {}, []

    def record(name: str, best: dict[str, float], what: str, base_what: str) -> None:
        results[name] = {"claim_s": best["claim"], "baseline_s": best["baseline"], "old_bound_s": OLD_BOUNDS[name]}
        rows.append([name, what, seconds(best["claim"]), base_what, seconds(best["baseline"]),
                     f"{best['claim'] / best['baseline']:.1f}x", f"< {OLD_BOUNDS[name]:g} s"])

    for name, (claim, baseline, what, base_what) in cases.items():
        once = quick and name == "import"  # one fresh interpreter each, no warm-up: see the header
        best = compare({"claim": claim, "baseline": baseline}, repeat=1 if once else repeat, warmup=not once)
        record(name, best, what, base_what)
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        for page, text in pages.items():
            (folder / f"{page}.html").write_text(text, encoding="utf-8")
        browser = _browser_case(folder / "big.html", folder / "small.html", folder)
        if browser is not None:
            if quick:
                browser[1]()  # one warm-up (Chromium's files read), on the small page
            best = compare({"claim": browser[0], "baseline": browser[1]}, repeat=1, warmup=not quick)
            record("browser", best, "chromium, big page", "chromium, small page")
    if "browser" not in results:
        rows.append(["browser", "skipped: chromium is not installed", "", "", "", "", ""])
    print(table(["claim", "timed", "best", "baseline", "best", "ratio", "old test bound"], rows))
    return results


if __name__ == "__main__":
    sys.exit(run(main))
