"""The ``math`` kind: final-answer grading, exact rules first and math-verify for the rest.

The response's final answer is read (``boxes`` and ``statements`` one level up, shared with
every grader's label reading), its spelling normalized (``answer_text``), read into forms
(``answer_forms``: numbers, sets, tuples, intervals, matrices, text), valued exactly
(``latex_value`` over ``closed_form`` and ``primes``) and compared (``equivalence``, which
leaves to math-verify what these cannot decide) → ``kind`` (the ``math`` grader, its quick path
and :func:`math_answer`). ``dapo`` and ``deepscaler`` compare their answers with
``equivalence`` too.
"""

from rewardrouter.rewards.math.kind import math_answer, math_quick

__all__ = ["math_answer", "math_quick"]
