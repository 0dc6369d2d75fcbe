"""What the two CPU paths share so that they give the same bits: the chunk size below which a
pass is never split over threads, the one rounding of a float64 product, and when group ids
serve as slot numbers as they are.

The torch path (:mod:`.cpu`) splits a segment sum over threads from two chunks on, which can
change the last bit of a sum; the NumPy path (:mod:`.host`) takes only the batches that are
never split.

Example::

    >>> import numpy as np
    >>> from rewardrouter.advantage.kernels import rounded_product
    >>> out = np.empty(1, dtype=np.float32)
    >>> rounded_product(np.array([0.1]), np.array(3.0), out)
    >>> out.tolist()
    [0.30000001192092896]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: Below this many samples per chunk, handing work to another thread costs more than it saves.
MIN_CHUNK = 1 << 18
#: From this many samples on, a segment sum may be split over threads.
SPLIT_FROM = 2 * MIN_CHUNK
#: Group ids spanning at most this many slots per sample are slot numbers (empty slots cost one
#: float each); wider or negative-heavy ids are renumbered by a sorting unique, which is an order
#: of magnitude slower.
MAX_SLOTS_PER_SAMPLE = 4


def slot_shift(lo: int, hi: int, n: int) -> int | None:
    """What to subtract from the group ids of ``n`` samples, ``lo`` to ``hi``, to use them as
    slot numbers: 0 when they are already, ``lo`` when their range is narrow enough; ``None``
    when they must be renumbered.

    >>> slot_shift(0, 7, 8), slot_shift(10**9, 10**9 + 7, 8), slot_shift(0, 10**9, 8)
    (0, 1000000000, None)
    """
    limit = MAX_SLOTS_PER_SAMPLE * n + 1024
    if lo >= 0 and hi < limit:
        return 0
    if hi - lo < limit:
        return lo
    return None


def rounded_product(
    x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], out: npt.NDArray[np.floating]
) -> None:
    """``x * y`` computed in float64 and rounded once to the dtype of ``out`` (``y`` may be
    0-dim); an overflow gives an infinity, which the caller checks."""
    with np.errstate(over="ignore"):
        np.multiply(x, y, out=out, casting="same_kind")
