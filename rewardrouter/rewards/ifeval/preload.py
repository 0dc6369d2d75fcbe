"""Importing this module loads lm-eval's IFEval checks (:func:`rewardrouter.rewards.ifeval.kind.checks`).

Worker processes import it when they start (``IfevalReward.worker_imports``): the import takes
seconds (NLTK; with lm-eval's dependencies installed, scipy and scikit-learn too), which would
otherwise come out of the first call's deadline in every new worker. Without the ``ifeval``
extra it raises ``ImportError``, which a worker ignores; the first call then fails with the
install line.
"""

from __future__ import annotations

from rewardrouter.rewards.ifeval.kind import checks

checks()
