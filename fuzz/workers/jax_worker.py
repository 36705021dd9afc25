#!/usr/bin/env python3
"""jax_worker.py - a parityfuzz worker for XLA through JAX (protocol version 2).

The *eager* side runs the op's JAX function op by op (`jax.disable_jit()`: every primitive
dispatched on its own, the way JAX runs outside jit); the *compiled* side runs the same
function under `jax.jit`, which XLA's CPU compiler fuses and reorders (a GELU, a layer_norm
or a softmax becomes one fused loop; reductions are split and vectorised). Float64 cases
run in float64 (`jax_enable_x64`; without it JAX would compute them in float32); float16
and bfloat16 (through ml_dtypes, which JAX brings) are run as given, with the reductions of
softmax, the norms and sum/mean accumulated in float32 as torch does and the registry's
error models promise (acc_dtype).

    PY=$(bash scripts/setup-venv.sh scripts/requirements-compilers.txt)
    parityfuzz --target "cmd:$PY fuzz/workers/jax_worker.py" --ops gelu,softmax,layer_norm --time 60

jit compiles once per (op, parameters, input dtypes and shapes): XLA specializes on shapes;
the 512 most recently used programs are kept.
The worker times compilation (the first call of a new jit) apart from runs and logs both at
exit. One CPU device; XLA's own thread pool is left as it is.

Graph cases (`parityfuzz graph`, FORMAT.md "Graph cases"): the nodes' functions composed
into one function under `jax.jit`, so XLA fuses across them; their eager side is
parityfuzz's builtin kernels (IEEE subnormals: XLA:CPU flushes them, which shows there).
"""
import argparse
import collections
import os
import time

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import worker_base as wb  # noqa: E402 (first: it moves stray output off the protocol)
import numpy as np  # noqa: E402

try:
    import jax  # noqa: E402
    import jax.numpy as jnp  # noqa: E402
    from jax import lax  # noqa: E402
except ImportError as e:
    wb.unavailable("jax_worker", e)

jax.config.update("jax_enable_x64", True)
NAME = "jax_worker"
HALF = ("float16", "bfloat16")


def _axes(p, rank, key="dim"):
    dims = p.get(key)
    if dims is None or dims == []:
        return None
    dims = dims if isinstance(dims, list) else [dims]
    return tuple(sorted(int(d) % rank for d in dims)) if rank else None


def _acc(x):
    """float32 for half types (torch's and the registry's accumulation), else as is."""
    return x.astype(jnp.float32) if x.dtype in (jnp.float16, jnp.bfloat16) else x


def _unary(fn):
    # computed in float32 for half types and rounded once, as torch's CPU kernels do
    # (opmath) and the registry's models assume; JAX alone would compute in the half type,
    # and each side's own chain of half roundings would be judged against a float32 bound
    return lambda p, x: fn(_acc(x[0])).astype(x[0].dtype)


def gelu(p, x):
    y = jax.nn.gelu(_acc(x[0]), approximate=str(p.get("approximate", "none")) == "tanh")
    return y.astype(x[0].dtype)


def _norm_axes(p, rank):
    k = len(p["normalized_shape"]) if isinstance(p.get("normalized_shape"), list) else 1
    return tuple(range(rank - k, rank))


def layer_norm(p, x):
    a = _acc(x[0])
    axes = _norm_axes(p, a.ndim)
    mean = a.mean(axes, keepdims=True)
    var = ((a - mean) ** 2).mean(axes, keepdims=True)
    y = (a - mean) * lax.rsqrt(var + float(p.get("eps", 1e-5)))
    if len(x) > 1:
        y = y * _acc(x[1])
    if len(x) > 2:
        y = y + _acc(x[2])
    return y.astype(x[0].dtype)


def rms_norm(p, x):
    a = _acc(x[0])
    eps = p.get("eps")
    eps = float(jnp.finfo(x[0].dtype).eps) if eps is None else float(eps)
    y = a * lax.rsqrt((a * a).mean(_norm_axes(p, a.ndim), keepdims=True) + eps)
    if len(x) > 1:
        y = y * _acc(x[1])
    return y.astype(x[0].dtype)


def _rowwise(fn):
    return lambda p, x: fn(_acc(x[0]), axis=int(p.get("dim", -1))).astype(x[0].dtype)


def _reduce(fn, accumulate):
    def build(p, x):
        a = _acc(x[0]) if accumulate else x[0]
        return fn(a, axis=_axes(p, a.ndim), keepdims=bool(p.get("keepdim", 0))).astype(x[0].dtype)
    return build


def _binary(fn):
    def build(p, x):
        alpha = float(p.get("alpha", 1.0))
        y = x[1] * jnp.asarray(alpha, x[1].dtype) if alpha != 1.0 else x[1]
        return fn(x[0], y)
    return build


def linear(p, x):
    y = jnp.matmul(x[0], x[1].T, preferred_element_type=jnp.float32 if x[0].dtype.name in HALF else None)
    if len(x) > 2:
        y = y + _acc(x[2])
    return y.astype(x[0].dtype)


def matmul(p, x):
    y = jnp.matmul(x[0], x[1], preferred_element_type=jnp.float32 if x[0].dtype.name in HALF else None)
    return y.astype(x[0].dtype)


OPS = {
    "relu": _unary(jax.nn.relu), "gelu": gelu, "silu": _unary(jax.nn.silu),
    "sigmoid": _unary(jax.nn.sigmoid), "tanh": _unary(jnp.tanh), "exp": _unary(jnp.exp),
    "log": _unary(jnp.log), "sqrt": _unary(jnp.sqrt), "rsqrt": _unary(lax.rsqrt),
    "reciprocal": _unary(jnp.reciprocal), "erf": _unary(lax.erf), "abs": _unary(jnp.abs),
    "neg": _unary(jnp.negative),
    "softmax": _rowwise(jax.nn.softmax), "log_softmax": _rowwise(jax.nn.log_softmax),
    "layer_norm": layer_norm, "rms_norm": rms_norm, "linear": linear, "matmul": matmul,
    "bmm": matmul,
    "add": _binary(jnp.add), "sub": _binary(jnp.subtract), "mul": _binary(jnp.multiply),
    "div": _binary(jnp.divide), "maximum": _binary(jnp.maximum), "minimum": _binary(jnp.minimum),
    "sum": _reduce(jnp.sum, True), "mean": _reduce(jnp.mean, True),
    "amax": _reduce(jnp.max, False), "amin": _reduce(jnp.min, False),
}


def params_key(params):
    return tuple(sorted((k, str(v)) for k, v in params.items()))


JIT_CACHE = 512   # compiled programs kept: XLA specializes on shapes, so a campaign makes
                  # thousands, and an unbounded cache would grow with the campaign's length


class Worker:
    def __init__(self):
        self.jitted = collections.OrderedDict()   # least recently used first
        self.compile_s = self.run_s = 0.0
        self.eager_s = 0.0
        self.compiles = 0

    def run_jitted(self, key, fn, args):
        """fn(*args) under jax.jit, the compiled program cached by key (least recently used
        dropped past JIT_CACHE): the result as numpy, and the seconds compiling took now."""
        compile_s = 0.0
        f = self.jitted.get(key)
        t0 = time.perf_counter()
        if f is not None:
            self.jitted.move_to_end(key)
        else:
            f = jax.jit(fn).lower(*args).compile()
            self.jitted[key] = f
            if len(self.jitted) > JIT_CACHE:
                self.jitted.popitem(last=False)
            self.compiles += 1
            compile_s = time.perf_counter() - t0
            self.compile_s += compile_s
            t0 = time.perf_counter()
        y = np.asarray(f(*args))
        self.run_s += time.perf_counter() - t0
        return y, compile_s

    def run_graph(self, side, case_path, out_path):
        """A graph case's compiled side: the nodes composed into one function under jax.jit,
        which XLA fuses as it chooses (the eager side is parityfuzz's builtin kernels)."""
        case = wb.graph_case_for(NAME, case_path, side, OPS)
        if any(a.size == 0 for a in case.inputs):
            raise wb.CaseSkip("%s does not run empty tensors" % NAME)
        nodes = [(name, OPS[op], ins, params) for name, op, ins, params, _ in case.nodes]

        def region(*xs):
            env = dict(zip(case.input_names, xs))
            for name, fn, ins, params in nodes:
                env[name] = fn(params, [env[i] for i in ins])
            return env[nodes[-1][0]]

        args = [jnp.asarray(a) for a in case.inputs]
        key = ("graph", case.family, tuple((n[1], params_key(n[3])) for n in case.nodes),
               tuple((a.dtype.str, a.shape) for a in case.inputs))
        y, compile_s = self.run_jitted(key, region, args)
        if y.size == int(np.prod(case.out_shape, dtype=np.int64)):
            y = y.reshape(case.out_shape)
        wb.write_output(out_path, case, y)
        return compile_s

    def run(self, side, case_path, out_path):
        if wb.case_version(case_path) == 2:
            return self.run_graph(side, case_path, out_path)
        case = wb.Case(case_path)
        if case.op not in OPS:
            raise wb.CaseSkip("%s has no mapping for %s" % (NAME, case.op))
        if any(a.size == 0 for a in case.inputs):
            raise wb.CaseSkip("%s does not run empty tensors" % NAME)
        fn = OPS[case.op]
        params = case.params
        compile_s = 0.0     # of this request: jit's lowering and XLA's compilation
        args = [jnp.asarray(a) for a in case.inputs]
        if side == "eager":
            t0 = time.perf_counter()
            try:
                with jax.disable_jit():
                    y = fn(params, args)
                    y = np.asarray(y)
            except Exception as e:
                raise wb.CaseSkip("JAX cannot run it: %s" % wb.one_line(e))
            self.eager_s += time.perf_counter() - t0
        elif side == "compiled":
            key = (case.op, params_key(params), tuple((a.dtype.str, a.shape) for a in case.inputs))
            y, compile_s = self.run_jitted(key, lambda *xs: fn(params, list(xs)), args)
        else:
            raise ValueError("unknown side '%s'" % side)
        if y.size == int(np.prod(case.out_shape, dtype=np.int64)):
            y = y.reshape(case.out_shape)
        wb.write_output(out_path, case, y)
        return compile_s

    def report(self):
        wb.log(NAME, "eager runs %.2f s; jit: %d compiles in %.2f s, runs %.2f s" %
               (self.eager_s, self.compiles, self.compile_s, self.run_s))


def main():
    argparse.ArgumentParser(description="parityfuzz worker: JAX op by op (eager) against "
                            "jax.jit (XLA, compiled)").parse_args()
    w = Worker()
    dtypes = ["float32", "float64", "float16"] + (["bfloat16"] if "bfloat16" in wb.NUMPY_DTYPES else [])
    try:
        return wb.serve(NAME, "jax-%s-xla-cpu" % jax.__version__, OPS, dtypes, w.run,
                        graphs=True)
    finally:
        w.report()


if __name__ == "__main__":
    wb.run_main(main)
