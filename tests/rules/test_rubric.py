"""CraftBot's decision rubric: thresholds, execution type, bad scores."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from heartbeat.errors import InvalidInput
from heartbeat.rules.rubric import Decision, Evaluation, Execution, evaluate

SCORES = ("impact", "risk", "cost", "urgency", "confidence")


def scores_totalling(total: int) -> dict[str, int]:
    """Five scores in 1..5 that add up to ``total`` (5..25)."""
    left = total - 5
    out = {}
    for name in SCORES:
        extra = min(4, left)
        out[name] = 1 + extra
        left -= extra
    assert sum(out.values()) == total
    return out


@pytest.mark.parametrize(
    ("total", "decision"),
    [
        (5, Decision.SKIP),
        (12, Decision.SKIP),
        (13, Decision.CONSIDER),
        (17, Decision.CONSIDER),
        (18, Decision.EXECUTE),
        (25, Decision.EXECUTE),
    ],
)
def test_thresholds(total: int, decision: Decision) -> None:
    result = evaluate(**scores_totalling(total))
    assert result == Evaluation(total=total, decision=decision, execution=Execution.INLINE)


def test_decision_and_execution_read_as_the_seed_words() -> None:
    result = evaluate(impact=4, risk=5, cost=4, urgency=3, confidence=4)
    # CraftBot's example 1: 20, execute, INLINE for a tier-1 notification.
    assert (result.total, result.decision, result.execution) == (20, "execute", "INLINE")


def test_seed_example_two_scheduled_when_long_running() -> None:
    result = evaluate(impact=4, risk=5, cost=3, urgency=2, confidence=4, long_running=True)
    assert (result.total, result.decision, result.execution) == (18, "execute", "SCHEDULED")


@pytest.mark.parametrize(
    ("tier", "long_running", "execution"),
    [
        (0, False, Execution.INLINE),
        (1, False, Execution.INLINE),
        (2, False, Execution.SCHEDULED),
        (3, False, Execution.SCHEDULED),
        (0, True, Execution.SCHEDULED),
        (1, True, Execution.SCHEDULED),
    ],
)
def test_execution_type(tier: int, long_running: bool, execution: Execution) -> None:
    result = evaluate(**scores_totalling(15), permission_tier=tier, long_running=long_running)
    assert result.execution is execution


@pytest.mark.parametrize("name", SCORES)
@pytest.mark.parametrize("bad", [0, 6, -1, True, 2.5, "3", None])
def test_bad_score_names_the_score(name: str, bad: object) -> None:
    kwargs: dict[str, object] = dict(scores_totalling(15))
    kwargs[name] = bad
    with pytest.raises(InvalidInput, match=name):
        evaluate(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-1, 4, True])
def test_bad_tier(bad: object) -> None:
    with pytest.raises(InvalidInput, match="permission_tier"):
        evaluate(**scores_totalling(15), permission_tier=bad)  # type: ignore[arg-type]


@given(st.lists(st.integers(1, 5), min_size=5, max_size=5))
def test_total_is_the_sum_and_decision_is_monotone(values: list[int]) -> None:
    result = evaluate(**dict(zip(SCORES, values, strict=True)))
    assert result.total == sum(values)
    expected = "execute" if sum(values) >= 18 else "consider" if sum(values) >= 13 else "skip"
    assert result.decision == expected
