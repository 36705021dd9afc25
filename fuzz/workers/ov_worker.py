#!/usr/bin/env python3
"""ov_worker.py - a parityfuzz worker for OpenVINO's CPU plugin (protocol version 2).

The *compiled* side is the op as an OpenVINO model (float32 parameters, as a converted
PyTorch or ONNX model has them) compiled by the CPU plugin: its graph transformations
(MVN, GELU, SoftPlus, RMS fusions, MatMul to FullyConnected), its oneDNN- and JIT-based
kernels, and its inference precision. The *eager* side is parityfuzz's builtin eager
kernels (READY's eager=builtin): OpenVINO has no eager mode of its own.

The inference precision is the contract the case is judged by. `--precision default`
(the default) takes the plugin's own choice, which is bfloat16 on a CPU with AMX or
AVX512-BF16 (this machine) and float32 elsewhere; `--precision f32|bf16|f16` sets
INFERENCE_PRECISION_HINT. The worker runs only cases of that dtype: a model computed in
bfloat16 is judged as a bfloat16 op (its inputs are bfloat16 values, exact in the float32
parameters; its float32 output is rounded to bfloat16 once, to nearest even, which is
exact when the plugin already rounded it), and float32 cases only at f32 precision, never
a bfloat16 computation against a float32 bound.

    PY=$(bash scripts/setup-venv.sh scripts/requirements-compilers.txt)
    parityfuzz --target "cmd:$PY fuzz/workers/ov_worker.py" --ops gelu,softmax,linear --time 60
    parityfuzz --target "cmd:$PY fuzz/workers/ov_worker.py --precision f32" --time 60

Models: activations are parameters with dynamic dims, so one compiled model serves every
shape of an (op, parameters, ranks); weights (linear's weight and bias, the norms' weight
and bias) are constants, as in a deployed model, which lets the plugin turn MatMul into its
FullyConnected kernel and repack the weight, and costs a compilation per case. Compilation
is timed apart from runs (OK compile_s=, and a log line at exit). One inference thread and
one stream, so a case replays to the same bits. An op parameter this worker does not map
is a SKIP, never a guess.

Graph cases (`parityfuzz graph`, FORMAT.md "Graph cases"): the nodes become one model (the
inputs a node takes as weights are constants), compiled once per case, so the plugin fuses
across them.
"""
import argparse
import time
import types

import worker_base as wb  # noqa: E402 (first: it moves stray output off the protocol)
import numpy as np  # noqa: E402

try:
    import openvino as ov  # noqa: E402
    import openvino.opset13 as ops  # noqa: E402
except ImportError as e:
    wb.unavailable("ov_worker", e)

NAME = "ov_worker"
PRECISIONS = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}   # hint -> case dtype
F32 = np.float32


class Builder:
    """One model: the case's activations as float32 parameters with dynamic dims, weights
    as constants (then the model is the case's own: `per_case`)."""

    def __init__(self, case, weights):
        self.case, self.per_case = case, False
        self.params, self.x = [], []
        for i, a in enumerate(case.inputs):
            if i in weights:
                self.per_case = True
                self.x.append(ops.constant(np.asarray(a, dtype=F32)))
            else:
                p = ops.parameter(ov.PartialShape([-1] * a.ndim), F32, name="x%d" % i)
                self.params.append((i, p))
                self.x.append(p)

    def const(self, v):
        return ops.constant(np.array(v, dtype=F32))

    def axes(self, values):
        return ops.constant(np.array(values, dtype=np.int64))


def _unary(fn):
    return (lambda b, p: fn(b.x[0])), ()


def gelu(b, p):
    return ops.gelu(b.x[0], "tanh" if str(p.get("approximate", "none")) == "tanh" else "erf")


def _norm_axes(b, p):
    shape = p.get("normalized_shape")
    k = len(shape) if isinstance(shape, list) else 1
    rank = b.case.inputs[0].ndim
    return list(range(rank - k, rank))


def layer_norm(b, p):
    # the PyTorch frontend's form: MVN over the normalized dims, then weight and bias
    y = ops.mvn(b.x[0], b.axes(_norm_axes(b, p)), True, float(p.get("eps", 1e-5)), "inside_sqrt")
    if len(b.x) > 1:
        y = ops.multiply(y, b.x[1])
    if len(b.x) > 2:
        y = ops.add(y, b.x[2])
    return y


def rms_norm(b, p):
    # the decomposition the plugin's RMS fusion matches: x * 1 / sqrt(mean(x^2) + eps) * w
    eps = p.get("eps")
    eps = float(np.finfo(wb.NUMPY_DTYPES[b.case.case_dtype]).eps) if eps is None else float(eps)
    ms = ops.reduce_mean(ops.power(b.x[0], b.const(2.0)), b.axes(_norm_axes(b, p)), True)
    inv = ops.divide(b.const(1.0), ops.sqrt(ops.add(ms, b.const(eps))))
    y = ops.multiply(b.x[0], inv)
    return ops.multiply(y, b.x[1]) if len(b.x) > 1 else y


def linear(b, p):
    y = ops.matmul(b.x[0], b.x[1], False, True)
    return ops.add(y, b.x[2]) if len(b.x) > 2 else y


def _binary(fn):
    def build(b, p):
        y = b.x[1]
        alpha = float(p.get("alpha", 1.0))
        if alpha != 1.0:
            y = ops.multiply(y, b.const(alpha))
        return fn(b.x[0], y)
    return build, ("alpha",)


def _rowwise(fn):
    return (lambda b, p: fn(b.x[0], int(p.get("dim", -1)))), ("dim",)


def _reduce(fn):
    def build(b, p):
        rank = b.case.inputs[0].ndim
        dims = p.get("dim")
        dims = list(range(rank)) if dims is None or dims == [] else (
            dims if isinstance(dims, list) else [dims])
        if rank == 0:
            return ops.convert(b.x[0], F32)   # a 0-d reduction is the value itself
        return fn(b.x[0], b.axes(sorted(int(d) % rank for d in dims)), bool(p.get("keepdim", 0)))
    return build, ("dim", "keepdim")


# op -> (build(builder, params), the parameters it maps, the inputs that are weights)
OPS = {
    "relu": _unary(ops.relu), "sigmoid": _unary(ops.sigmoid), "tanh": _unary(ops.tanh),
    "exp": _unary(ops.exp), "log": _unary(ops.log), "sqrt": _unary(ops.sqrt),
    "abs": _unary(ops.abs), "neg": _unary(ops.negative), "erf": _unary(ops.erf),
    "silu": _unary(lambda x: ops.swish(x)), "mish": _unary(ops.mish),
    "softplus": _unary(ops.softplus),
    "reciprocal": ((lambda b, p: ops.divide(b.const(1.0), b.x[0])), ()),
    "rsqrt": ((lambda b, p: ops.divide(b.const(1.0), ops.sqrt(b.x[0]))), ()),
    "gelu": (gelu, ("approximate",)),
    "softmax": _rowwise(ops.softmax), "log_softmax": _rowwise(ops.log_softmax),
    "layer_norm": (layer_norm, ("normalized_shape", "eps"), (1, 2)),
    "rms_norm": (rms_norm, ("normalized_shape", "eps"), (1,)),
    "linear": (linear, (), (1, 2)),
    "matmul": ((lambda b, p: ops.matmul(b.x[0], b.x[1], False, False)), ()),
    "bmm": ((lambda b, p: ops.matmul(b.x[0], b.x[1], False, False)), ()),
    "add": _binary(ops.add), "sub": _binary(ops.subtract), "mul": _binary(ops.multiply),
    "div": _binary(ops.divide), "maximum": _binary(ops.maximum),
    "minimum": _binary(ops.minimum),
    "sum": _reduce(ops.reduce_sum), "mean": _reduce(ops.reduce_mean),
    "amax": _reduce(ops.reduce_max), "amin": _reduce(ops.reduce_min),
}
for _op, _entry in OPS.items():
    if len(_entry) == 2:
        OPS[_op] = _entry + ((),)


def params_key(params):
    return tuple(sorted((k, str(v)) for k, v in params.items()))


class Worker:
    def __init__(self, core, hint, dtype):
        self.core, self.hint, self.dtype = core, hint, dtype
        self.config = {"INFERENCE_NUM_THREADS": 1, "NUM_STREAMS": 1}
        if hint is not None:
            self.config["INFERENCE_PRECISION_HINT"] = hint
        self.models = {}
        self.compile_s = self.run_s = 0.0
        self.compiles = 0

    def compile(self, model):
        """The model compiled for the CPU plugin, and the seconds it took (counted)."""
        t0 = time.perf_counter()
        try:
            c = self.core.compile_model(model, "CPU", self.config)
        except RuntimeError as e:
            raise wb.CaseSkip("the CPU plugin cannot compile it: %s" % wb.one_line(e))
        took = time.perf_counter() - t0
        self.compile_s += took
        self.compiles += 1
        return c, took

    def compiled(self, case):
        """The compiled model and its parameter order, and the seconds compiling took now."""
        build, known, weights = OPS[case.op]
        for k in case.params:
            if k not in known:
                raise wb.CaseSkip("%s does not map %s's parameter %s" % (NAME, case.op, k))
        key = (case.op, params_key(case.params), tuple(a.ndim for a in case.inputs))
        entry = self.models.get(key)
        if entry is not None:
            return entry, 0.0
        b = Builder(case, weights)
        y = build(b, case.params)
        c, took = self.compile(ov.Model([y], [p for _, p in b.params], "case"))
        entry = (c.create_infer_request(), [i for i, _ in b.params])
        if not b.per_case:
            self.models[key] = entry
        return entry, took

    def compiled_graph(self, case):
        """A graph case's nodes as one model, compiled by the CPU plugin (which fuses what it
        matches); inputs that some node takes as weights are constants, as for single ops."""
        weights = set()
        for _, op, ins, params, _ in case.nodes:
            build, known, wslots = OPS[op]
            for k in params:
                if k not in known:
                    raise wb.CaseSkip("%s does not map %s's parameter %s" % (NAME, op, k))
            weights.update(case.input_names.index(ins[i]) for i in wslots
                           if i < len(ins) and ins[i] in case.input_names)
        b = Builder(case, weights)
        env = {name: (b.x[i], a.ndim) for i, (name, a) in
               enumerate(zip(case.input_names, case.inputs))}
        for name, op, ins, params, _ in case.nodes:
            # the node's view of a builder: its operands, and its first operand's rank
            view = types.SimpleNamespace(
                x=[env[i][0] for i in ins], const=b.const, axes=b.axes,
                case=types.SimpleNamespace(inputs=[types.SimpleNamespace(ndim=env[ins[0]][1])],
                                           case_dtype=case.case_dtype))
            y = OPS[op][0](view, params)
            rank = env[ins[0]][1]
            if op in ("sum", "mean", "amax", "amin") and not bool(params.get("keepdim", 0)):
                dims = params.get("dim")
                rank = 0 if dims is None or dims == [] else rank - (len(dims) if isinstance(dims, list) else 1)
            env[name] = (y, rank)
        c, took = self.compile(ov.Model([env[case.nodes[-1][0]][0]], [p for _, p in b.params],
                                        "graph"))
        return (c.create_infer_request(), [i for i, _ in b.params]), took

    def run(self, side, case_path, out_path):
        if side != "compiled":   # eager=builtin: parityfuzz runs the eager side itself
            raise ValueError("this worker runs compiled sides only (eager=builtin)")
        if wb.case_version(case_path) == 2:
            case = wb.graph_case_for(NAME, case_path, side, OPS)
        else:
            case = wb.Case(case_path)
        if case.op not in OPS:
            raise wb.CaseSkip("%s has no mapping for %s" % (NAME, case.op))
        if case.case_dtype != self.dtype or case.out_dtype != self.dtype:
            raise wb.CaseSkip("%s at %s precision runs %s cases only" % (NAME, self.hint or "default",
                                                                      self.dtype))
        if any(a.size == 0 for a in case.inputs):
            raise wb.CaseSkip("%s does not run empty tensors" % NAME)
        (request, order), took = (self.compiled_graph(case) if isinstance(case, wb.GraphSpec)
                                  else self.compiled(case))
        feed = {k: np.array(case.inputs[i], dtype=F32, order="C") for k, i in enumerate(order)}
        t0 = time.perf_counter()
        y = np.array(request.infer(feed)[0], dtype=F32, copy=True)
        self.run_s += time.perf_counter() - t0
        if y.size == int(np.prod(case.out_shape, dtype=np.int64)):
            y = y.reshape(case.out_shape)
        # one rounding to the case dtype, to nearest even (numpy's and ml_dtypes' cast)
        wb.write_output(out_path, case, y.astype(wb.NUMPY_DTYPES[self.dtype]))
        return took

    def report(self):
        wb.log(NAME, "%d compiles in %.2f s, runs %.2f s" % (self.compiles, self.compile_s,
                                                              self.run_s))


def main():
    ap = argparse.ArgumentParser(description="parityfuzz worker: OpenVINO's CPU plugin "
                                 "(compiled) against parityfuzz's builtin eager kernels")
    ap.add_argument("--precision", choices=("default",) + tuple(PRECISIONS), default="default",
                    help="INFERENCE_PRECISION_HINT (default: the plugin's own choice)")
    args = ap.parse_args()
    core = ov.Core()
    hint = None if args.precision == "default" else args.precision
    effective = hint or core.get_property("CPU", "INFERENCE_PRECISION_HINT").get_type_name()
    if effective not in PRECISIONS:
        wb.log(NAME, "the CPU plugin's inference precision is %s, which this worker does not "
               "judge (f32, bf16, f16)" % effective)
        return 2
    dtype = PRECISIONS[effective]
    if dtype not in wb.NUMPY_DTYPES:
        wb.log(NAME, "unavailable: %s needs ml_dtypes for its numpy type" % dtype)
        return 2
    w = Worker(core, hint, dtype)
    name = "openvino-%s-cpu-%s" % (ov.__version__.split("-")[0], effective)
    try:
        return wb.serve(NAME, name, OPS, (dtype,), w.run, eager_builtin=True, graphs=True)
    finally:
        w.report()


if __name__ == "__main__":
    wb.run_main(main)
