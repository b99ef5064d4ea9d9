"""CraftBot's decision rubric: should a proactive task run, and how.

Five scores from 1 to 5 (impact, risk, cost, urgency, confidence; higher is
better on every one) add up to a total: 18 or more execute, 13 to 17 consider
(may need the user), below 13 skip. Quick tier 0/1 work runs INLINE in the
heartbeat; long multi-step work or work needing approval is SCHEDULED as a
separate task, which must record its outcome.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from heartbeat.errors import InvalidInput

__all__ = ["Decision", "Evaluation", "Execution", "evaluate"]

EXECUTE_AT = 18  # lowest total that executes
CONSIDER_AT = 13  # lowest total worth considering
_SCORE_RANGE = range(1, 6)
_TIER_RANGE = range(4)  # 0 silent, 1 notify, 2 approval, 3 high-risk


class Decision(StrEnum):
    EXECUTE = "execute"  # total >= 18: a strong candidate, run it
    CONSIDER = "consider"  # total 13..17: may need the user's input
    SKIP = "skip"  # total < 13: skip or defer this heartbeat


class Execution(StrEnum):
    INLINE = "INLINE"  # inside this heartbeat: tier 0/1 quick work
    SCHEDULED = "SCHEDULED"  # a separate task that records its own outcome


@dataclass(frozen=True)
class Evaluation:
    total: int  # sum of the five scores, 5..25
    decision: Decision
    execution: Execution


def _checked(name: str, value: object, allowed: range) -> int:
    # bool is an int subclass, but True is not a score.
    if isinstance(value, bool) or not isinstance(value, int) or value not in allowed:
        raise InvalidInput(
            f"{name} must be an integer from {allowed.start} to {allowed.stop - 1}, got {value!r}"
        )
    return value


def evaluate(
    *,
    impact: int,
    risk: int,
    cost: int,
    urgency: int,
    confidence: int,
    permission_tier: int = 1,
    long_running: bool = False,
) -> Evaluation:
    """Score a proactive task with CraftBot's rubric.

    Each score must be 1..5 and the tier 0..3, else :class:`InvalidInput`
    naming the offending value. SCHEDULED when ``long_running`` or the tier is
    2 or more; INLINE otherwise.
    """
    scores = {
        "impact": impact,
        "risk": risk,
        "cost": cost,
        "urgency": urgency,
        "confidence": confidence,
    }
    total = sum(_checked(name, value, _SCORE_RANGE) for name, value in scores.items())
    tier = _checked("permission_tier", permission_tier, _TIER_RANGE)
    if total >= EXECUTE_AT:
        decision = Decision.EXECUTE
    elif total >= CONSIDER_AT:
        decision = Decision.CONSIDER
    else:
        decision = Decision.SKIP
    execution = Execution.SCHEDULED if long_running or tier >= 2 else Execution.INLINE
    return Evaluation(total=total, decision=decision, execution=execution)
