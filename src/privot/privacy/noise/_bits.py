"""Entropy for the privacy samplers: where every random bit comes from.

:class:`BitSource` turns uniform 64-bit words into the exact primitives the samplers
use (fair coins, ``width``-bit fields, uniform integers below a bound by rejection).
Two sources: the operating system's CSPRNG (:func:`os.urandom`, read through a
process-local, thread- and fork-safe buffer), the default; and an adapter over a
caller's seeded :class:`numpy.random.Generator`, for tests and reproducible
experiments. :func:`resolve_rng` turns every sampler's ``rng`` argument into one of them.

Privacy
-------
``rng=None`` is the only choice fit for publication: :func:`resolve_rng` reports
``secure=True`` for the OS source (and for a :class:`BitSource` whose ``secure`` is
true) and ``secure=False`` for a seeded generator, and mechanisms record the flag in
their :class:`~privot.privacy.types.Release`. A forked child drops the buffered words,
so parent and child never share bits. See ``docs/privacy/discrete.md``, section 1.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from privot.errors import InvalidParameterError

__all__ = ["BitSource", "resolve_rng"]

_I63 = np.int64(2**63 - 1)
_CHUNK = 1 << 20  # bytes read from os.urandom per refill (at least)


class BitSource:
    """Uniform random integers from some source of bits.

    Subclasses implement :meth:`words` (uniform 64-bit words) and may override the
    others for speed. All methods are exact: no floating point is involved.
    """

    secure: bool = False

    def words(self, n: int) -> np.ndarray:
        """``n`` independent uniform ``uint64`` words."""
        raise NotImplementedError

    def coins(self, n: int) -> np.ndarray:
        """``n`` independent fair booleans."""
        w = self.words((n + 63) // 64)
        return np.unpackbits(w.view(np.uint8))[:n].view(bool)

    def bits(self, n: int, width: int) -> np.ndarray:
        """``n`` independent uniform integers in ``[0, 2**width)`` as ``int64``
        (``1 <= width <= 63``), cut from words without waste for widths 8, 16, 32."""
        for lane, dt in ((8, np.uint8), (16, np.uint16), (32, np.uint32)):
            if width <= lane:
                raw = self.words((n * lane + 63) // 64).view(dt)[:n]
                if width < lane:
                    raw = raw >> dt(lane - width)
                return raw.astype(np.int64)
        return (self.words(n) >> np.uint64(64 - width)).astype(np.int64)

    def _lanes(self, n: int, width: int) -> np.ndarray:
        """Like :meth:`bits` but, for widths 8, 16, 32 and 64, the unsigned view itself
        (no copy): cheap table indices and bit fields."""
        for lane, dt in ((8, np.uint8), (16, np.uint16), (32, np.uint32)):
            if width == lane:
                return self.words((n * lane + 63) // 64).view(dt)[:n]
        if width == 64:
            return self.words(n)
        return self.bits(n, width)

    def uniform_below(self, high: np.ndarray | int, n: int | None = None) -> np.ndarray:
        """Uniform integers in ``[0, high)`` (elementwise), as ``int64``.

        ``high`` is an int64 array (or a scalar with ``n`` draws), every entry in
        ``[1, 2**62]``. Rejection sampling from ``w``-bit words (w = 16, 32 or 63, the
        smallest that holds ``high``): a word ``r`` is kept when
        ``r < 2**w - (2**w mod high)``, so ``r mod high`` is exactly uniform. A power
        of two needs no rejection.
        """
        if np.ndim(high) == 0:
            return self._uniform_scalar(int(high), int(n))
        h = np.asarray(high, dtype=np.int64)
        if h.size == 0:
            return np.empty(h.shape, dtype=np.int64)
        lo, hi = int(h.min()), int(h.max())
        if lo == hi:
            return self._uniform_scalar(lo, h.size).reshape(h.shape)
        h = h.ravel()
        size = h.size
        out = np.empty(size, dtype=np.int64)
        if hi <= 2**31:
            top = np.int64(2**32) - (np.int64(2**32) % h) - 1
        else:  # accept r <= 2**63 - 1 - (2**63 mod h), written without overflow
            top = _I63 - ((_I63 % h) + 1) % h
        sel = np.arange(size)
        while sel.size:
            r = self._draw(sel.size, hi)
            ok = r <= top[sel]
            out[sel[ok]] = r[ok] % h[sel[ok]]
            sel = sel[~ok]
        return out.reshape(np.shape(high))

    def _draw(self, m: int, hi: int) -> np.ndarray:
        """``m`` uniform words of 16, 32 or 63 bits (as int64), wide enough for ``hi``."""
        if hi <= 2**15:
            return self.words((m + 3) // 4).view(np.uint16)[:m].astype(np.int64)
        if hi <= 2**31:
            return self.words((m + 1) // 2).view(np.uint32)[:m].astype(np.int64)
        return (self.words(m) >> np.uint64(1)).astype(np.int64)

    def _uniform_scalar(self, h: int, n: int) -> np.ndarray:
        if h == 1:
            return np.zeros(n, dtype=np.int64)
        if h & (h - 1) == 0:  # a power of two: plain bits, no rejection
            return self.bits(n, h.bit_length() - 1)
        width = 2**16 if h <= 2**15 else 2**32 if h <= 2**31 else 2**63
        lim = width - width % h  # accept r < lim
        out = np.empty(n, dtype=np.int64)
        r = self._draw(n, h)
        ok = r < lim
        if ok.all():
            np.remainder(r, h, out=out)
            return out
        out[ok] = r[ok] % h
        sel = np.flatnonzero(~ok)
        while sel.size:
            r = self._draw(sel.size, h)
            ok = r < lim
            out[sel[ok]] = r[ok] % h
            sel = sel[~ok]
        return out


class _OSEntropy(BitSource):
    """Words from :func:`os.urandom`, buffered in large chunks (thread- and fork-safe)."""

    secure = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buf = np.empty(0, dtype=np.uint64)
        self._pos = 0
        self._pid = os.getpid()

    def words(self, n: int) -> np.ndarray:
        with self._lock:
            if self._pid != os.getpid():  # forked child: never reuse the parent's bits
                self._buf = np.empty(0, dtype=np.uint64)
                self._pos = 0
                self._pid = os.getpid()
            avail = self._buf.size - self._pos
            if n <= avail:
                out = self._buf[self._pos:self._pos + n]
                self._pos += n
                return out
            head = self._buf[self._pos:]
            need = n - avail
            nbytes = max(8 * need, _CHUNK)
            fresh = np.frombuffer(os.urandom(nbytes), dtype=np.uint64)
            self._buf = fresh
            self._pos = need
            out = fresh[:need]
            return np.concatenate([head, out]) if avail else out


class _GeneratorSource(BitSource):
    """Bits from a caller's :class:`numpy.random.Generator` (reproducible, not secure)."""

    secure = False

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def words(self, n: int) -> np.ndarray:
        return self.rng.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)

    def coins(self, n: int) -> np.ndarray:
        return self.rng.integers(0, 2, size=n).astype(bool)

    def uniform_below(self, high: np.ndarray | int, n: int | None = None) -> np.ndarray:
        # numpy's bounded integers are exact (Lemire's rejection method).
        if np.ndim(high) == 0:
            return self.rng.integers(0, int(high), size=int(n), dtype=np.int64)
        h = np.asarray(high, dtype=np.int64)
        return self.rng.integers(0, h, dtype=np.int64)


_OS_SOURCE = _OSEntropy()


def resolve_rng(rng: np.random.Generator | BitSource | None) -> tuple[BitSource, bool]:
    """Turn the ``rng`` argument of every sampler into ``(bit source, secure flag)``.

    Parameters
    ----------
    rng : numpy.random.Generator, BitSource or None
        ``None``: the operating system's CSPRNG (``secure=True``). A
        :class:`numpy.random.Generator`: reproducible bits, ``secure=False`` (fine for
        tests and experiments, **not** for publication).

    Returns
    -------
    source : BitSource
    secure : bool
    """
    if rng is None:
        return _OS_SOURCE, True
    if isinstance(rng, BitSource):
        return rng, rng.secure
    if isinstance(rng, np.random.Generator):
        return _GeneratorSource(rng), False
    raise InvalidParameterError("rng", rng, "None (secure OS entropy) or a numpy.random.Generator")
