"""jax-ulps.py - the largest float32 error, in ulps, of a JAX unary function under jax.jit
(XLA:CPU) and op by op, against numpy's float64 result rounded nowhere, over a grid.

A measurement behind the README's JAX findings (a graph campaign found XLA's float32 tanh
beyond the 4 ulps tolerance/op_unary.c allows; the single-op campaign could not, its eager
side being XLA's kernel too). numpy's float64 tanh/exp/log are within an ulp of binary64,
2^-29 of a float32 ulp: the reference error is negligible here.

usage: $(bash scripts/setup-venv.sh scripts/requirements-compilers.txt) scripts/jax-ulps.py \
           tanh 0 9 2000001
"""
import sys

import jax
import jax.numpy as jnp
import numpy as np


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: jax-ulps.py FUNCTION LO HI POINTS (FUNCTION: a jax.numpy unary "
                 "function that numpy has too, e.g. tanh)")
    name, lo, hi, n = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
    f_jax, f_np = getattr(jnp, name, None), getattr(np, name, None)
    if f_jax is None or f_np is None:
        sys.exit("jax-ulps.py: no function %r in both jax.numpy and numpy" % name)
    xs = np.linspace(lo, hi, n, dtype=np.float32)
    ref = f_np(xs.astype(np.float64))
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    for label, fn in (("jit", jax.jit(f_jax)), ("op by op", f_jax)):
        got = np.asarray(fn(xs)).astype(np.float64)
        err = np.abs(got - ref) / ulp
        i = int(np.argmax(err))
        print("%s %s, jax %s: max %.2f ulps at x = %r (got %r, exact %r), %d points in [%g, %g]"
              % (name, label, jax.__version__, err[i], float(xs[i]), float(got[i]),
                 float(ref[i]), n, lo, hi))


if __name__ == "__main__":
    main()
