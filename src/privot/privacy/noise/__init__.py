r"""Secure noise samplers: the only place randomness for privacy comes from.

Everything here samples **exactly** on the integers from uniformly random bits, with
integer comparisons only (no floating-point ``log`` or ``exp`` of random numbers), in
the style of Canonne, Kamath and Steinke (2020), *The Discrete Gaussian for
Differential Privacy* (CKS below), vectorised with numpy:

* :func:`uniform_integers` -- uniform on ``{0, ..., high-1}`` by rejection from
  random words (exact).
* :func:`bernoulli_exp` -- ``Bernoulli(exp(-gamma))`` for rational ``gamma`` (CKS
  Algorithm 1, exact).
* :func:`geometric`, :func:`discrete_laplace` -- exact for every float ``scale`` (a
  float is the exact rational ``num / 2**j``): inversion of a table of certified
  thresholds plus CKS-style rejection for the low bits (see below).
* :func:`discrete_gaussian` -- exact for every float ``sigma``: table inversion for
  ``sigma < 32``, else rejection from a piecewise-uniform envelope with an exact
  CKS-Algorithm-1 acceptance test (CKS Algorithm 3 element by element for many
  distinct sigmas).
* :func:`secure_laplace`, :func:`secure_gaussian` -- real-valued releases safe against
  the floating-point attack of Mironov (2012): the values are rounded to the grid
  :math:`2^{-k}\mathbb{Z}` and *integer* noise is added on that grid.
* :func:`polya` -- negative binomial with real shape (Gamma-Poisson mixture); **not**
  exact (floating point), see its docstring.

How the fast samplers stay exact
--------------------------------
A uniform real :math:`W\in[0,1)` is read lazily: its first ``B = 16`` bits ``w``
decide ``W < c`` for a constant ``c`` whenever ``w != floor(2**B c)``; in the rare
tie (probability ``2**-16``) more bits of the *same* ``W`` are drawn and compared
with certified bounds on ``c`` computed in exact integer arithmetic
(:func:`_exp_neg`, a Taylor series with a rigorous error term), until the comparison
is decided. The constants are ``exp(-rational)`` or rationals; no random number ever
goes through a floating-point function. So

* a geometric (ratio ``q = exp(-1/b)``) is sampled by **inversion**,
  ``V = #{v >= 1 : W < q**v}``, with a 65536-entry lookup table from ``w`` to
  ``V`` (plus a tie flag) when ``b < 128``;
* for ``b >= 128`` the geometric is split exactly as ``Y = 2**j Z + U`` with
  ``2**j ~ b / 64``: ``Z`` is a geometric of ratio ``exp(-2**j / b)`` (table
  inversion) and ``U`` the truncated geometric on ``[0, 2**j)``, drawn as ``j``
  uniform bits accepted with probability ``exp(-U/b)`` by CKS Algorithm 1, whose
  Bernoulli factors are a constant (compared lazily) and ``U / 2**j`` (compared with
  ``j`` fresh bits). ``Z`` and ``U`` are independent because the blocks of bits of a
  geometric are;
* the discrete Laplace is a two-sided table for ``b < 128`` and
  ``sign * geometric`` with CKS's rejection of ``-0`` above;
* the discrete Gaussian (``sigma >= 32``) draws a bucket ``I`` of width ``D`` about
  ``sigma/16..sigma/32`` with probability proportional to the Gaussian weight ``p_I``
  at its inner edge (table inversion), a uniform offset in the bucket, and accepts
  with probability ``p(x)/p_I = exp(-delta)``, ``delta`` the product of three numbers
  in [0, 1] each drawn as an exact Bernoulli (about 97% accepted); for
  ``sigma < 32``, ``|X|`` is a table inversion with no rejection.

The derivations, the exactness arguments and the timings are in
``docs/privacy/discrete.md``.

Randomness
----------
Every sampler takes ``rng``. ``None`` (the default) reads the operating system's
CSPRNG (:func:`os.urandom`) through a process-local buffer refilled in large chunks;
the buffer is discarded in a forked child so parent and child never share bits. A
seeded :class:`numpy.random.Generator` is accepted for tests and reproducible
experiments; :func:`resolve_rng` then reports ``secure=False`` and mechanisms record
it in their :class:`~privot.privacy.types.Release`.

The capabilities' entry points (heatmaps, barycenters, sampling, learning) follow one
rule, :func:`check_rng`: ``None``, a :class:`numpy.random.Generator`, a
:class:`BitSource` or a non-negative int seed, the seed meaning
``numpy.random.default_rng(seed)`` (the same release, bit for bit, and ``secure=False``).
The samplers here take no int: a seed passed down twice would restart one stream.

The rule for the grid exponent ``k`` is in ``docs/privacy/discrete.md``,
``docs/privacy/laplace.md`` and ``docs/privacy/gaussian.md``.

Layout
------
One private module per job, each re-exported here (import from
:mod:`privot.privacy.noise`, not from the submodules). A module imports only from the
ones above it in this list:

* ``_bits`` -- the entropy: :class:`BitSource`, the OS CSPRNG source, the adapter for
  a seeded :class:`numpy.random.Generator`, :func:`resolve_rng`;
* ``_scales`` -- the arguments: output sizes, floats as exact ratios ``num / 2**j``,
  arrays of scales and their dispatch to the one-scale or per-element samplers;
* ``_exact`` -- certified arithmetic on constants, lazy comparisons of a uniform with
  a constant, inversion tables;
* ``_bernoulli`` -- :func:`uniform_integers`, :func:`bernoulli`, :func:`bernoulli_exp`,
  :func:`bernoulli_exp_parts` (CKS Algorithm 1);
* ``_laplace`` -- :func:`geometric`, :func:`discrete_laplace`;
* ``_gaussian`` -- :func:`discrete_gaussian`;
* ``_grid`` -- the releases on the :math:`2^{-k}` grid: :func:`grid_exponent`,
  :func:`round_to_grid`, :func:`secure_laplace`, :func:`secure_gaussian`;
* ``_shares`` -- the shares of the shuffle protocol: :func:`polya`,
  :func:`polya_laplace_shares`.

Privacy
-------
This package is the only place randomness for privacy comes from: every noise value
privot releases is drawn here, through :mod:`privot.privacy.mechanisms` or, for the
users' shares of the shuffle protocol, directly. Its functions are samplers: they
calibrate nothing and charge no budget (the mechanisms do both, budget first). Only
``rng=None``, the OS CSPRNG, is fit for a publishable release.
"""

# The private names below (``x as x``) are those the tests and benchmarks reach. ``_LAZY_BITS``
# is deliberately not re-exported: every submodule that reads it holds its own binding,
# so setting it here would change nothing (the tests patch the submodules).
from privot.privacy.noise._bernoulli import (
    bernoulli,
    bernoulli_exp,
    bernoulli_exp_parts,
    uniform_integers,
)
from privot.privacy.noise._bits import RNG_RULE, BitSource, check_rng, resolve_rng
from privot.privacy.noise._exact import _abs_dlap_table as _abs_dlap_table
from privot.privacy.noise._exact import _e1_threshold as _e1_threshold
from privot.privacy.noise._exact import _exp_neg as _exp_neg
from privot.privacy.noise._exact import _geometric_table as _geometric_table
from privot.privacy.noise._exact import _LazyUniform as _LazyUniform
from privot.privacy.noise._exact import _ratio_bounds as _ratio_bounds
from privot.privacy.noise._exact import _Table as _Table
from privot.privacy.noise._exact import exp_neg_bounds
from privot.privacy.noise._gaussian import _gauss_tables as _gauss_tables
from privot.privacy.noise._gaussian import discrete_gaussian
from privot.privacy.noise._grid import (
    DEFAULT_PRECISION_BITS,
    grid_exponent,
    round_to_grid,
    secure_gaussian,
    secure_laplace,
)
from privot.privacy.noise._laplace import discrete_laplace, geometric
from privot.privacy.noise._scales import _dyadic_array as _dyadic_array
from privot.privacy.noise._shares import polya, polya_laplace_shares

__all__ = [
    "BitSource",
    "RNG_RULE",
    "check_rng",
    "exp_neg_bounds",
    "resolve_rng",
    "uniform_integers",
    "bernoulli",
    "bernoulli_exp",
    "bernoulli_exp_parts",
    "geometric",
    "discrete_laplace",
    "discrete_gaussian",
    "polya",
    "polya_laplace_shares",
    "grid_exponent",
    "round_to_grid",
    "secure_laplace",
    "secure_gaussian",
    "DEFAULT_PRECISION_BITS",
]
