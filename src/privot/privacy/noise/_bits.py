"""Entropy for the privacy samplers: where every random bit comes from.

:class:`BitSource` turns uniform 64-bit words into the exact primitives the samplers
use (fair coins, ``width``-bit fields, uniform integers below a bound by rejection).
Two sources: the operating system's CSPRNG (:func:`os.urandom`, read through a
process-local, thread- and fork-safe buffer), the default; and an adapter over a
caller's seeded :class:`numpy.random.Generator`, for tests and reproducible
experiments. :func:`resolve_rng` turns every sampler's ``rng`` argument into one of them;
:func:`check_rng` is the rule of the capabilities' entry points (an int seed accepted
there, turned into a generator once).

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
from collections.abc import Callable

import numpy as np

from privot.errors import InvalidParameterError

__all__ = ["BitSource", "RNG_RULE", "check_rng", "resolve_rng"]

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
        ``[1, 2**62]``. Rejection sampling from ``w``-bit words, ``w`` =
        :func:`_word_width` of the largest bound (16, 32 or 63): a word ``r`` is kept
        when ``r <= _accept_top(h, w) = 2**w - (2**w mod h) - 1``, so ``r mod h`` is
        exactly uniform. The words drawn and the threshold they are compared with come
        from the same ``w`` (one rule, used by both). A scalar power of two needs no
        rejection.
        """
        if np.ndim(high) == 0:
            return self._uniform_scalar(int(high), int(n))
        h = np.asarray(high, dtype=np.int64)
        if h.size == 0:
            return np.empty(h.shape, dtype=np.int64)
        lo, hi = int(h.min()), int(h.max())
        if lo == hi:
            return self._uniform_scalar(lo, h.size).reshape(h.shape)
        return self._reject(h.ravel(), h.size, _word_width(hi)).reshape(np.shape(high))

    def _draw(self, m: int, width: int) -> np.ndarray:
        """``m`` uniform ``width``-bit words (``width`` in {16, 32, 63}) as int64."""
        if width == 16:
            return self.words((m + 3) // 4).view(np.uint16)[:m].astype(np.int64)
        if width == 32:
            return self.words((m + 1) // 2).view(np.uint32)[:m].astype(np.int64)
        return (self.words(m) >> np.uint64(1)).astype(np.int64)

    def _uniform_scalar(self, h: int, n: int) -> np.ndarray:
        if h == 1:
            return np.zeros(n, dtype=np.int64)
        if h & (h - 1) == 0:  # a power of two: plain bits, no rejection
            return self.bits(n, h.bit_length() - 1)
        return self._reject(h, n, _word_width(h))

    def _reject(self, h: np.ndarray | int, n: int, width: int) -> np.ndarray:
        """``n`` uniform integers below ``h`` (an int, or an ``(n,)`` int64 array) by
        rejection from ``width``-bit words: the one loop of both forms of
        :meth:`uniform_below`."""
        top = _accept_top(h, width)
        each = np.ndim(h) > 0  # a bound (and a threshold) per draw
        r = self._draw(n, width)
        ok = r <= top
        if ok.all():
            return r % h
        out = np.empty(n, dtype=np.int64)
        sel = np.arange(n)
        while sel.size:
            keep = sel[ok]
            out[keep] = r[ok] % (h[keep] if each else h)
            sel = sel[~ok]
            if sel.size:
                r = self._draw(sel.size, width)
                ok = r <= (top[sel] if each else top)
        return out


def _word_width(hi: int) -> int:
    """Bits per word for uniform draws below bounds up to ``hi``: 16, 32 or 63, the
    smallest with ``2**w >= 2 hi`` (so at most half of the words are rejected)."""
    return 16 if hi <= 2**15 else 32 if hi <= 2**31 else 63


def _accept_top(h: np.ndarray | int, width: int) -> np.ndarray | int:
    """The largest accepted ``width``-bit word for bound(s) ``h``:
    ``2**width - (2**width mod h) - 1``, the last word of the largest multiple of ``h``
    that fits, so ``r mod h`` of an accepted ``r`` is exactly uniform. Exact for int64
    arrays (the 63-bit case written without overflow) and Python ints."""
    if isinstance(h, np.ndarray):
        if width == 63:  # 2**63 - 1 - (2**63 mod h), with 2**63 mod h = ((2**63-1) mod h + 1) mod h
            return _I63 - ((_I63 % h) + 1) % h
        span = np.int64(1) << np.int64(width)
        return span - (span % h) - 1
    return 2**width - 2**width % h - 1


class _OSEntropy(BitSource):
    """Words from :func:`os.urandom`, buffered in large chunks (thread- and fork-safe).

    ``read`` is where the bytes come from: :func:`os.urandom` in production. Tests pass
    a seeded stream of raw bytes instead (``tests/privacy/secure_path.py``), so that the
    exact code that runs in production (this buffer and every method of
    :class:`BitSource`) runs under test, reproducibly.
    """

    secure = True

    def __init__(self, read: Callable[[int], bytes] = os.urandom) -> None:
        self._read = read
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
            fresh = np.frombuffer(self._read(nbytes), dtype=np.uint64)
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

#: What every capability's ``rng`` accepts, in the words of its refusal.
RNG_RULE = ("None (secure OS entropy), a numpy.random.Generator, a privot BitSource or a "
            "non-negative int seed (a seeded generator: not fit for publication)")


def check_rng(rng: object, *, name: str = "rng",
              bits: bool = True) -> np.random.Generator | BitSource | None:
    """The one ``rng`` rule of privot's capabilities (heatmaps, barycenters, sampling,
    learning): resolve their ``rng`` argument once, at the entry point.

    Parameters
    ----------
    rng : None, numpy.random.Generator, BitSource or int
        ``None``: the operating system's CSPRNG, the only choice fit for publication.
        A :class:`numpy.random.Generator` or a :class:`BitSource`: used as given. An int
        seed ``s >= 0``: ``numpy.random.default_rng(s)``, exactly as if the caller had
        passed that generator (the same release, bit for bit), and, like it, recorded
        as ``secure=False``: reproducible, **not** for publication.
    name : str
        The parameter's name in the refusal (``"cluster_rng"``...).
    bits : bool
        False where the capability also draws public randomness from a numpy generator
        (barycenters): a :class:`BitSource` is then refused by name.

    Returns
    -------
    None, numpy.random.Generator or BitSource
        Pass it on to every draw of the release: an int is turned into a generator
        here, once, so two draws never restart the same seeded stream.

    Raises
    ------
    InvalidParameterError
        Anything else (a bool, a negative int, a float, a legacy ``RandomState``).
    """
    if rng is None or isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, BitSource):
        if bits:
            return rng
        raise InvalidParameterError(
            name, rng, "None, a numpy.random.Generator or a non-negative int seed (a "
            "BitSource is not accepted here: this capability also draws public "
            "randomness from a numpy generator)")
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, (bool, np.bool_)) \
            and int(rng) >= 0:
        return np.random.default_rng(int(rng))
    raise InvalidParameterError(name, rng, RNG_RULE if bits else
                                "None (secure OS entropy), a numpy.random.Generator or a "
                                "non-negative int seed (a seeded generator: not fit for "
                                "publication)")


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
    raise InvalidParameterError("rng", rng, "None (secure OS entropy), a numpy.random.Generator "
                                "or a BitSource (an int seed is taken by the capabilities' "
                                "entry points, privot.privacy.noise.check_rng)")
