#!/usr/bin/env python3
"""ort_worker.py - a parityfuzz worker for ONNX Runtime (protocol version 2).

Each case becomes an ONNX graph of the op as exporters write it (torch.onnx's
decompositions: GELU as x * 0.5 * (1 + erf(x / sqrt 2)), layer_norm and rms_norm as their
reductions, linear as MatMul + Add), run by ONNX Runtime's CPU provider twice: the *eager*
side with every graph optimization off (ORT_DISABLE_ALL: the nodes as written), the
*compiled* side with all of them on (ORT_ENABLE_ALL: constant folding, node fusions such as
Gelu, FastGelu, LayerNormalization, SimplifiedLayerNormalization and MatMul + Add, and the
layout transformations), which is what a deployment runs. Ops that are one ONNX node with
no fusion to make (relu, softmax, matmul, the reductions) run the same kernel on both sides
and come out bit-identical: the campaign counts them as such (parityfuzz's summary line says
how many cases were judged).

    PY=$(bash scripts/setup-venv.sh scripts/requirements-compilers.txt)
    parityfuzz --target "cmd:$PY fuzz/workers/ort_worker.py" \\
               --ops gelu,layer_norm,rms_norm,linear --time 60
    parityfuzz graph --target "cmd:$PY fuzz/workers/ort_worker.py" --time 60

Sessions are cached per (op, parameters, input dtypes and ranks, side): the graphs have
symbolic dims, so one session serves every shape; its creation (the graph optimizer's
work, the "compile") is timed apart from its runs and logged at exit on stderr. One
intra-op thread, so a case replays to the same bits. float32 only: ONNX Runtime's CPU
kernels for most of these ops have no float16 or bfloat16 form, and numpy no bfloat16.

Graph cases (`parityfuzz graph`, FORMAT.md "Graph cases"): the nodes become one ONNX graph
run with ORT_ENABLE_ALL, so the optimizer fuses across them (Gemm + activation, the
decomposed softmax); their eager side is parityfuzz's builtin kernels.
"""
import argparse
import time

import worker_base as wb  # noqa: E402 (first: it moves stray output off the protocol)
import numpy as np  # noqa: E402

try:
    import onnx  # noqa: E402
    from onnx import helper  # noqa: E402
    import onnxruntime as ort  # noqa: E402
except ImportError as e:
    wb.unavailable("ort_worker", e)

NAME = "ort_worker"
OPSET = 17


class Graph:
    """Builds one graph: inputs x0.. with symbolic dims, nodes, one output 'out'."""

    def __init__(self, inputs):
        self.nodes, self.inits, self.n = [], [], 0
        self.inputs = []
        for i, arr in enumerate(inputs):
            dims = ["d%d_%d" % (i, k) for k in range(arr.ndim)]
            self.inputs.append(helper.make_tensor_value_info(
                "x%d" % i, helper.np_dtype_to_tensor_dtype(arr.dtype), dims))
        self.dtype = inputs[0].dtype

    def const(self, value, dtype=None):
        name = "c%d" % len(self.inits)
        arr = np.array(value, dtype=dtype or self.dtype)
        self.inits.append(onnx.numpy_helper.from_array(arr, name))
        return name

    def op(self, kind, *ins, **attrs):
        self.n += 1
        out = "t%d" % self.n
        self.nodes.append(helper.make_node(kind, list(ins), [out], **attrs))
        return out

    def model(self, out):
        self.nodes.append(helper.make_node("Identity", [out], ["out"]))
        g = helper.make_graph(self.nodes, "case", self.inputs,
                              [helper.make_tensor_value_info("out", helper.np_dtype_to_tensor_dtype(self.dtype), None)],
                              self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
        m.ir_version = 8
        return m.SerializeToString()


def _axes(p, rank, key="dim"):
    dims = p.get(key)
    if dims is None or dims == []:
        return list(range(rank))
    dims = dims if isinstance(dims, list) else [dims]
    return sorted(d % rank if rank else 0 for d in dims)


def _unary(kind):
    return lambda g, p, x: g.op(kind, x[0])


def gelu(g, p, x):
    if str(p.get("approximate", "none")) == "tanh":    # torch.onnx's tanh form: FastGelu
        cube = g.op("Pow", x[0], g.const(3.0))
        inner = g.op("Add", x[0], g.op("Mul", cube, g.const(0.044715)))
        t = g.op("Tanh", g.op("Mul", inner, g.const(0.7978845608028654)))
        return g.op("Mul", g.op("Mul", x[0], g.const(0.5)), g.op("Add", t, g.const(1.0)))
    erf = g.op("Erf", g.op("Div", x[0], g.const(1.4142135623730951)))
    return g.op("Mul", g.op("Mul", x[0], g.op("Add", erf, g.const(1.0))), g.const(0.5))


def layer_norm(g, p, x):
    k = len(p.get("normalized_shape", [])) if isinstance(p.get("normalized_shape"), list) else 1
    axes = [-(i + 1) for i in reversed(range(k))]
    mean = g.op("ReduceMean", x[0], axes=axes, keepdims=1)
    d = g.op("Sub", x[0], mean)
    var = g.op("ReduceMean", g.op("Pow", d, g.const(2.0)), axes=axes, keepdims=1)
    y = g.op("Div", d, g.op("Sqrt", g.op("Add", var, g.const(float(p.get("eps", 1e-5))))))
    if len(x) > 1:
        y = g.op("Mul", y, x[1])
    if len(x) > 2:
        y = g.op("Add", y, x[2])
    return y


def rms_norm(g, p, x):
    k = len(p.get("normalized_shape", [])) if isinstance(p.get("normalized_shape"), list) else 1
    axes = [-(i + 1) for i in reversed(range(k))]
    eps = p.get("eps")
    eps = float(np.finfo(g.dtype).eps) if eps is None else float(eps)   # torch's default
    ms = g.op("ReduceMean", g.op("Pow", x[0], g.const(2.0)), axes=axes, keepdims=1)
    y = g.op("Div", x[0], g.op("Sqrt", g.op("Add", ms, g.const(eps))))
    return g.op("Mul", y, x[1]) if len(x) > 1 else y


def linear(g, p, x):
    y = g.op("MatMul", x[0], g.op("Transpose", x[1], perm=[1, 0]))
    return g.op("Add", y, x[2]) if len(x) > 2 else y


def _binary(kind):
    def build(g, p, x):
        y = x[1]
        alpha = float(p.get("alpha", 1.0))
        if kind in ("Add", "Sub") and alpha != 1.0:
            y = g.op("Mul", y, g.const(alpha))
        return g.op(kind, x[0], y)
    return build


def _rowwise(kind):
    return lambda g, p, x: g.op(kind, x[0], axis=int(p.get("dim", -1)))


def _reduce(kind):
    def build(g, p, x):
        axes = _axes(p, g.rank)
        keep = int(p.get("keepdim", 0))
        if not axes:
            return g.op("Identity", x[0])
        if kind == "ReduceSum":
            return g.op(kind, x[0], g.const(axes, np.int64), keepdims=keep)
        return g.op(kind, x[0], axes=axes, keepdims=keep)
    return build


OPS = {
    "relu": _unary("Relu"), "sigmoid": _unary("Sigmoid"), "tanh": _unary("Tanh"),
    "exp": _unary("Exp"), "log": _unary("Log"), "sqrt": _unary("Sqrt"), "abs": _unary("Abs"),
    "neg": _unary("Neg"), "erf": _unary("Erf"), "reciprocal": _unary("Reciprocal"),
    "gelu": gelu, "silu": lambda g, p, x: g.op("Mul", x[0], g.op("Sigmoid", x[0])),
    "layer_norm": layer_norm, "rms_norm": rms_norm, "linear": linear,
    "matmul": lambda g, p, x: g.op("MatMul", x[0], x[1]),
    "softmax": _rowwise("Softmax"), "log_softmax": _rowwise("LogSoftmax"),
    "add": _binary("Add"), "sub": _binary("Sub"), "mul": _binary("Mul"), "div": _binary("Div"),
    "maximum": _binary("Max"), "minimum": _binary("Min"),
    "sum": _reduce("ReduceSum"), "mean": _reduce("ReduceMean"),
    "amax": _reduce("ReduceMax"), "amin": _reduce("ReduceMin"),
}


def params_key(params):
    return tuple(sorted((k, str(v)) for k, v in params.items()))


class Worker:
    def __init__(self):
        self.sessions = {}
        self.compile_s = {"eager": 0.0, "compiled": 0.0}
        self.run_s = {"eager": 0.0, "compiled": 0.0}
        self.built = {"eager": 0, "compiled": 0}

    def session(self, side, case):
        """The session for the case, and the seconds spent building it now (0 if cached)."""
        key = (side, case.op, params_key(case.params),
               tuple((a.dtype.str, a.ndim) for a in case.inputs))
        s = self.sessions.get(key)
        if s is None:
            g = Graph(case.inputs)
            g.rank = case.inputs[0].ndim
            model = g.model(OPS[case.op](g, case.params, ["x%d" % i for i in range(len(case.inputs))]))
            so = ort.SessionOptions()
            so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_DISABLE_ALL
                                           if side == "eager" else
                                           ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
            so.intra_op_num_threads = 1
            so.inter_op_num_threads = 1
            t0 = time.perf_counter()
            s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
            built = time.perf_counter() - t0
            self.compile_s[side] += built
            self.built[side] += 1
            self.sessions[key] = s
            return s, built
        return s, 0.0

    def run_graph(self, side, case_path, out_path):
        """A graph case's compiled side: the nodes as one ONNX graph under ORT_ENABLE_ALL,
        whose optimizer fuses what it can (the eager side is parityfuzz's builtin kernels)."""
        case = wb.graph_case_for(NAME, case_path, side, OPS)
        if case.out_dtype != "float32" or any(a.dtype != np.float32 for a in case.inputs):
            raise wb.CaseSkip("%s runs float32 only" % NAME)
        key = ("graph", case.family, tuple((n[1], params_key(n[3])) for n in case.nodes),
               tuple((a.dtype.str, a.ndim) for a in case.inputs))
        s, built = self.sessions.get(key), 0.0
        if s is None:
            g = Graph(case.inputs)
            env = {name: ("x%d" % i, a.ndim) for i, (name, a) in
                   enumerate(zip(case.input_names, case.inputs))}
            for name, op, ins, params, _ in case.nodes:
                # a builder reads the rank of its first operand (the reductions' axes)
                g.rank = env[ins[0]][1]
                out = OPS[op](g, params, [env[i][0] for i in ins])
                rank = g.rank
                if op in ("sum", "mean", "amax", "amin") and not int(params.get("keepdim", 0)):
                    rank -= len(_axes(params, g.rank))
                env[name] = (out, rank)
            model = g.model(env[case.nodes[-1][0]][0])
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            so.intra_op_num_threads = 1
            so.inter_op_num_threads = 1
            t0 = time.perf_counter()
            s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
            built = time.perf_counter() - t0
            self.compile_s["compiled"] += built
            self.built["compiled"] += 1
            self.sessions[key] = s
        t0 = time.perf_counter()
        y = np.asarray(s.run(["out"], {"x%d" % i: a for i, a in enumerate(case.inputs)})[0])
        self.run_s["compiled"] += time.perf_counter() - t0
        if y.size == int(np.prod(case.out_shape, dtype=np.int64)):
            y = y.reshape(case.out_shape)
        wb.write_output(out_path, case, y)
        return built

    def run(self, side, case_path, out_path):
        if wb.case_version(case_path) == 2:
            return self.run_graph(side, case_path, out_path)
        case = wb.Case(case_path)
        if case.op not in OPS:
            raise wb.CaseSkip("%s has no mapping for %s" % (NAME, case.op))
        if case.out_dtype != "float32" or any(a.dtype != np.float32 for a in case.inputs):
            raise wb.CaseSkip("%s runs float32 only" % NAME)
        if side not in ("eager", "compiled"):
            raise ValueError("unknown side '%s'" % side)
        try:
            s, built = self.session(side, case)
        except Exception as e:   # ONNX Runtime refused the graph: not a case it runs
            if side == "eager":
                raise wb.CaseSkip("ONNX Runtime cannot build this graph: %s" % wb.one_line(e))
            raise
        feed = {"x%d" % i: a for i, a in enumerate(case.inputs)}
        t0 = time.perf_counter()
        try:
            y = s.run(["out"], feed)[0]
        except Exception as e:
            if side == "eager":
                raise wb.CaseSkip("ONNX Runtime cannot run it: %s" % wb.one_line(e))
            raise
        self.run_s[side] += time.perf_counter() - t0
        y = np.asarray(y)
        if y.size == int(np.prod(case.out_shape, dtype=np.int64)):
            y = y.reshape(case.out_shape)   # a 0-d result may come back as [1]
        wb.write_output(out_path, case, y)
        return built

    def report(self):
        for side in ("eager", "compiled"):
            wb.log(NAME, "%s: %d sessions built in %.2f s, runs %.2f s" %
                   (side, self.built[side], self.compile_s[side], self.run_s[side]))


def main():
    argparse.ArgumentParser(description="parityfuzz worker: ONNX Runtime, optimizations "
                            "off (eager) against all on (compiled)").parse_args()
    w = Worker()
    try:
        return wb.serve(NAME, "onnxruntime-%s-enable-all" % ort.__version__, OPS, ("float32",),
                        w.run, graphs=True)
    finally:
        w.report()


if __name__ == "__main__":
    wb.run_main(main)
