"""What the two CPU paths share so that they give the same bits: the chunk size below which a
pass is never split over threads, and the one rounding of a float64 product.

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


def rounded_product(
    x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], out: npt.NDArray[np.floating]
) -> None:
    """``x * y`` computed in float64 and rounded once to the dtype of ``out`` (``y`` may be
    0-dim); an overflow gives an infinity, which the caller checks."""
    with np.errstate(over="ignore"):
        np.multiply(x, y, out=out, casting="same_kind")
