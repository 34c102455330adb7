"""Refusing state that would not fit in memory, before anything is allocated.

Full d×d matrices (LASEC, the RLS of BBQ), dense support-vector rows (kernel PA) and a stored
random projection (random Fourier features) grow with the square of the dimension or with a
budget times it. A model that cannot fit fails when it is built, with a message that names the
variant to use instead, rather than dying in ``np.zeros`` or swapping the machine.
"""

from __future__ import annotations

__all__ = ["MAX_STATE_BYTES", "require_fits"]

# 1 GiB: a full matrix of up to 11,585² float64s. Far beyond that, a quadratic-cost update
# (O(d²) per label) is too slow for a stream anyway, so the limit is about time as much as memory.
MAX_STATE_BYTES = 2**30


def _human(n_bytes: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n_bytes < 1024 or unit == "TB":
            return f"{n_bytes:,.1f} {unit}"
        n_bytes /= 1024
    raise AssertionError("unreachable")


def require_fits(rows: int, cols: int, what: str, instead: str) -> None:
    """Raise ``ValueError`` if a float64 array of ``rows × cols`` exceeds :data:`MAX_STATE_BYTES`.

    >>> require_fits(100, 100, "a 100×100 matrix", "a smaller one")
    >>> require_fits(2**20, 2**20, "LASEC's D×D matrix", "'lasec-diag'")
    Traceback (most recent call last):
    ...
    ValueError: LASEC's D×D matrix needs 1,048,576 × 1,048,576 float64 = 8.0 TB (limit 1.0 GB); use 'lasec-diag'
    """
    n_bytes = 8.0 * rows * cols
    if n_bytes > MAX_STATE_BYTES:
        raise ValueError(f"{what} needs {rows:,} × {cols:,} float64 = {_human(n_bytes)} "
                         f"(limit {_human(MAX_STATE_BYTES)}); use {instead}")
