"""find_shape_rule: the simplest rule over shape features that says which shapes fail."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradcheck._sweeps.pattern import ShapeRule, find_shape_rule

MKN = ("m", "k", "n")
SHAPES = list(itertools.product(range(1, 9), repeat=3))  # all 512 (m, k, n) in 1..8


def labels(rule) -> np.ndarray:
    return np.array([bool(rule(*s)) for s in SHAPES])


@pytest.mark.parametrize(
    ("rule", "text", "kind"),
    [
        (lambda m, k, n: m % 2 == 1 and n % 2 == 1, "m is odd and n is odd", "and"),
        (lambda m, k, n: k == 1, "k == 1", "single"),
        (lambda m, k, n: m < n, "m < n", "single"),
        (lambda m, k, n: n % 4 == 0, "n is a multiple of 4", "single"),
        (lambda m, k, n: m % 2 == 0 or k % 2 == 0, "m is even or k is even", "or"),
        (lambda m, k, n: m % 2 == 1 and k % 2 == 0, "m is odd and k is even", "and"),
        (lambda m, k, n: k > n and m % 8 == 0, "m is a multiple of 8 and k > n", "and"),
        (lambda m, k, n: m == k or n == 1, "n == 1 or m == k", "or"),
    ],
    ids=["m-n-odd", "k-eq-1", "m-lt-n", "n-mult-4", "m-or-k-even", "burn-parity", "mult8-and-gt",
         "eq-or-one"],
)
def test_known_rule_is_recovered_exactly(rule, text, kind):
    """A labeling made by a rule of the grammar comes back as that rule, exactly."""
    failed = labels(rule)
    found = find_shape_rule(SHAPES, failed, dim_names=MKN)
    assert (found.text, found.kind, found.exact, found.accuracy) == (text, kind, True, 1.0)
    assert (found.n_failed, found.n_total) == (int(failed.sum()), 512)
    assert [found.predicate(s) for s in SHAPES] == failed.tolist()


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("rate", [0.02, 0.05, 0.10, 0.20, 0.30])
def test_random_labeling_has_no_simple_rule(seed, rate):
    """Failures at random are not explained by any rule, however many candidates exist."""
    failed = np.random.default_rng(seed).random(len(SHAPES)) < rate
    found = find_shape_rule(SHAPES, failed, dim_names=MKN)
    assert found.text == "no simple rule"
    assert (found.kind, found.found, found.exact, found.predicate) == ("none", False, False, None)
    assert found.best_candidate and found.accuracy < 1.0


def test_majority_classifier_is_not_a_rule():
    """90% of shapes passing makes "no shape fails" 90% accurate, and still not a rule."""
    failed = np.random.default_rng(7).random(len(SHAPES)) < 0.10
    assert 1 - failed.mean() >= 0.88
    assert str(find_shape_rule(SHAPES, failed)).startswith("no simple rule")


@pytest.mark.parametrize(
    ("value", "text"), [(False, "no shape fails"), (True, "every shape fails")]
)
def test_uniform_outcome_is_a_constant_rule(value, text):
    """All-pass and all-fail sweeps are described by the constant rules, exactly."""
    found = find_shape_rule(SHAPES, [value] * len(SHAPES))
    assert (found.text, found.kind, found.exact) == (text, "constant", True)
    assert found.predicate((3, 3, 3)) is value


@pytest.mark.parametrize(
    ("names", "text"),
    [(None, "d0 is odd and d2 is odd"), (("rows", "inner", "cols"), "rows is odd and cols is odd")],
)
def test_dim_names_name_the_dimensions(names, text):
    """The rule's text uses the given dimension names, or d0, d1, ... by default."""
    failed = labels(lambda m, k, n: m % 2 == 1 and n % 2 == 1)
    assert find_shape_rule(SHAPES, failed, dim_names=names).text == text


def test_rule_with_few_exceptions_is_returned_as_approximate():
    """Three flipped labels on a parity rule: the rule is still reported, marked inexact."""
    failed = labels(lambda m, k, n: m % 2 == 1 and n % 2 == 1)
    failed[np.random.default_rng(0).choice(len(SHAPES), 3, replace=False)] ^= True
    found = find_shape_rule(SHAPES, failed, dim_names=MKN)
    assert (found.text, found.exact, found.kind) == ("m is odd and n is odd", False, "and")
    assert found.accuracy == pytest.approx(509 / 512)
    assert "approximate" in str(found)


def test_rule_drowned_in_noise_is_not_returned():
    """Forty flipped labels: the parity rule is only the best candidate, not an answer."""
    failed = labels(lambda m, k, n: m % 2 == 1 and n % 2 == 1)
    failed[np.random.default_rng(0).choice(len(SHAPES), 40, replace=False)] ^= True
    found = find_shape_rule(SHAPES, failed, dim_names=MKN)
    assert (found.text, found.best_candidate) == ("no simple rule", "m is odd and n is odd")
    assert 0.9 < found.accuracy < 0.97


def test_rule_wrong_on_six_percent_is_not_returned_even_when_failures_are_common():
    """Half the shapes fail: a rule with 30 errors beats the majority well but is too inexact."""
    failed = labels(lambda m, k, n: m % 2 == 0)
    failed[np.random.default_rng(0).choice(len(SHAPES), 30, replace=False)] ^= True
    found = find_shape_rule(SHAPES, failed, dim_names=MKN)
    assert (found.text, found.best_candidate) == ("no simple rule", "m is even")
    assert found.accuracy == pytest.approx(482 / 512)


def test_rule_missing_over_a_tenth_of_failures_is_not_returned():
    """ "k == 1" is 98% accurate but leaves 8 of 72 failing shapes unexplained: no rule."""
    failed = labels(lambda m, k, n: k == 1)
    others = np.flatnonzero(~failed)
    failed[np.random.default_rng(0).choice(others, 8, replace=False)] = True
    found = find_shape_rule(SHAPES, failed, dim_names=MKN)
    assert (found.text, found.best_candidate) == ("no simple rule", "k == 1")
    assert found.accuracy == pytest.approx(504 / 512)


def test_lone_failure_is_not_explained_by_a_wider_rule():
    """One failing shape: a rule that also blames 7 passing shapes is worse than none."""
    failed = np.zeros(len(SHAPES), bool)
    failed[0] = True
    assert find_shape_rule(SHAPES, failed).text == "no simple rule"


def test_simpler_rule_wins_over_equivalent_pair():
    """ "m is odd" is also "m is odd and m is not a multiple of 4"; the single feature wins."""
    found = find_shape_rule(SHAPES, labels(lambda m, k, n: m % 2 == 1), dim_names=MKN)
    assert (found.text, found.kind) == ("m is odd", "single")


def test_features_equal_on_the_data_go_to_the_earlier_one_and_are_listed():
    """With m in {1, 2}, "m is odd" and "m == 1" coincide: the earlier names it, both shown."""
    shapes = [(m, n) for m in (1, 2) for n in range(1, 6)]
    found = find_shape_rule(shapes, [m == 1 for m, n in shapes], dim_names=("m", "n"))
    assert found.text == "m is odd"
    assert "m == 1" in found.alternatives


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        (ShapeRule("k == 1", 1.0, True, 64, 512, kind="single"),
         "k == 1 (exact: 64 of 512 shapes fail)"),
        (ShapeRule("m < n", 0.99, False, 60, 512, kind="single"),
         "m < n (approximate: right for 99.0%; 60 of 512 shapes fail)"),
        (ShapeRule.none(51, 512, 0.9, "k == 1"),
         "no simple rule (51 of 512 shapes fail; best candidate 'k == 1' right for 90.0%)"),
    ],
    ids=["exact", "approximate", "none"],
)
def test_str_states_rule_and_counts(rule, expected):
    """str() gives the rule with how well it fits and how many shapes fail."""
    assert str(rule) == expected


@pytest.mark.parametrize(
    ("shapes", "failed", "names"),
    [
        ([], [], None),
        ([(1, 2), (3,)], [True, False], None),
        ([(1, 2), (3, 4)], [True], None),
        ([(1, 2), (3, 4)], [True, False], ("m",)),
    ],
    ids=["empty", "ragged", "label-count", "name-count"],
)
def test_malformed_input_is_rejected(shapes, failed, names):
    """Inconsistent shapes, labels or names raise ValueError instead of a wrong rule."""
    with pytest.raises(ValueError):
        find_shape_rule(shapes, failed, dim_names=names)


small_shapes = st.lists(st.tuples(*[st.integers(1, 9)] * 3), min_size=1, max_size=40)


@given(data=st.data(), shapes=small_shapes)
def test_any_returned_rule_matches_its_own_accuracy(data, shapes):
    """An exact rule's predicate reproduces `failed`; any rule's predicate scores its accuracy."""
    failed = data.draw(st.lists(st.booleans(), min_size=len(shapes), max_size=len(shapes)))
    found = find_shape_rule(shapes, failed)
    if found.found:
        right = np.mean([found.predicate(s) == f for s, f in zip(shapes, failed)])
        assert right == pytest.approx(found.accuracy)
        if found.exact:
            assert [found.predicate(s) for s in shapes] == failed


# An independent statement of the grammar, to check every rule in it can be found.
UNARY = [lambda d: d % 2 == 1, lambda d: d % 2 == 0, lambda d: d == 1, lambda d: d > 1,
         lambda d: d % 4 == 0, lambda d: d % 4 != 0, lambda d: d % 8 == 0, lambda d: d % 8 != 0]
BINARY = [lambda a, b: a == b, lambda a, b: a != b, lambda a, b: a < b, lambda a, b: a > b,
          lambda a, b: a <= b, lambda a, b: a >= b]


@st.composite
def grammar_feature(draw):
    if draw(st.booleans()):
        f, d = draw(st.sampled_from(UNARY)), draw(st.integers(0, 2))
        return lambda s: f(s[d])
    f, (i, j) = draw(st.sampled_from(BINARY)), draw(st.sampled_from([(0, 1), (0, 2), (1, 2)]))
    return lambda s: f(s[i], s[j])


@given(f=grammar_feature(), g=grammar_feature(), op=st.sampled_from(["single", "and", "or"]),
       shapes=small_shapes)
def test_every_rule_of_the_grammar_is_found_exactly(f, g, op, shapes):
    """Labels made by any one- or two-feature rule always get an exact rule back."""
    combine = {"single": lambda s: f(s), "and": lambda s: f(s) and g(s),
               "or": lambda s: f(s) or g(s)}[op]
    failed = [bool(combine(s)) for s in shapes]
    found = find_shape_rule(shapes, failed)
    assert found.exact and found.accuracy == 1.0
    assert [found.predicate(s) for s in shapes] == failed
