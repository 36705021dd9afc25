#!/usr/bin/python3
"""torch_worker.py - the example external worker for parityfuzz (protocol version 2).

It runs each fuzz case twice, on CPU: the *eager* side with plain PyTorch, the *compiled*
side through a compiler, so that parityfuzz can judge the two outputs against each other
and against the op's MPFR reference. The case file, the protocol and the output file are
specified in formats/FORMAT.md ("Fuzz cases" and "Fuzz worker protocol").

Usage:

    parityfuzz --target 'cmd:/usr/bin/python3 fuzz/workers/torch_worker.py' \\
               --ops matmul,softmax --time 30

    torch_worker.py [--mode {freeze,compile,compile-dynamic,eager}] [--eager {torch,builtin}]

Modes (what the compiled side runs; the default is compile where torch >= 2, else freeze):
    freeze   the op wrapped in an nn.Module with its parameters as constants, then
             torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(m).eval()))
    compile  torch.compile(m) (torch >= 2): Inductor compiles per shape, so use
             parityfuzz --values-per-shape N to let it reuse what it compiled
    compile-dynamic  torch.compile(m, dynamic=True): symbolic shapes from the start
    eager    plain eager on both sides: a self-test, it should yield no findings
Compiled modules are cached per (op, parameters, input dtypes, input ranks).
--eager builtin leaves single-op eager sides to parityfuzz's builtin IEEE kernels (READY's
eager=builtin, as graph cases always do): torch's eager and compiled sides often call one
oneDNN kernel (bf16 linear, conv2d), and a defect they share is then judged, not hidden.

Protocol (one line each, on stdin / stdout; logs go to stderr):
    worker -> parityfuzz   HELLO 2
    parityfuzz -> worker   OFFER ops=<op,...> dtypes=<dtype,...>
    worker -> parityfuzz   SKIP <op> <reason>   for each offered op it does not run
    worker -> parityfuzz   READY 2 torch-<version>-<mode> ops=<op,...> dtypes=<dtype,...>
    parityfuzz -> worker   RUN <eager|compiled> <case.h5> <out.h5>
    worker -> parityfuzz   OK | ERROR <message> | SKIP <reason>
    parityfuzz -> worker   QUIT (or EOF): exit 0
The worker knows no list of parityfuzz's ops: it answers the offer from its own map
(IMPLEMENTATIONS: op -> the module that calls torch), and skips what the map lacks or
what this torch cannot run (no scaled_dot_product_attention before 2.0, no rms_norm
before 2.4).
A kernel that torch lacks for the case's dtype ("not implemented for 'Half'", float8 on an
old torch) is answered SKIP on the eager side; on the compiled side, once eager has run the
case, any exception is an ERROR (a finding).

Determinism: one intra-op and one inter-op thread, CPU only, so that a case replays to the
same bits.

Test hooks (for parityfuzz's own tests of crash and hang handling; comma-separated op lists):
    PARITY_WORKER_CRASH_ON=<op>   the compiled side of <op> kills the worker with SIGSEGV
    PARITY_WORKER_HANG_ON=<op>    the compiled side of <op> sleeps forever
parityfuzz starts the worker under /bin/sh -c and reports a crash as "killed by signal 11"
whether the shell exec'd the worker or reported its death as status 128 + 11.

Graph cases (`parityfuzz graph`, FORMAT.md "Graph cases"): the nodes' modules become one
module (Graph below), compiled as a whole, so Inductor fuses across them; their eager side
is parityfuzz's builtin kernels.
"""
import argparse
import os
import signal
import time

# first: worker_base moves everything but the protocol off the real stdout, and holds what
# every worker here shares (the protocol's lines, attribute reading, one-line errors)
import worker_base as wb  # noqa: E402
from worker_base import CaseSkip, as_list, as_py, as_str  # noqa: E402


def log(msg):
    wb.log("torch_worker", msg)


import h5py  # noqa: E402  (after the stdout redirection: imports may print)
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from typing import List, Optional  # noqa: E402

Tensor = torch.Tensor
TORCH_MAJOR = int(torch.__version__.split(".")[0])

torch.set_num_threads(1)
try:
    torch.set_num_interop_threads(1)
except RuntimeError:
    pass  # already set by something that ran first: one thread is all we use anyway
torch.set_grad_enabled(False)


# ---- dtypes ----------------------------------------------------------------------------

def _dtype_table():
    t = {
        "float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
        "bfloat16": torch.bfloat16, "int8": torch.int8, "int16": torch.int16,
        "int32": torch.int32, "int64": torch.int64, "uint8": torch.uint8, "bool": torch.bool,
    }
    for name in ("float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64"):
        if hasattr(torch, name):
            t[name] = getattr(torch, name)
    return t


DTYPES = _dtype_table()
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}
# Formats stored as integer bit patterns with a "dtype" attribute (FORMAT.md).
BIT_STORED = {"bfloat16": np.uint16, "float8_e4m3fn": np.uint8, "float8_e5m2": np.uint8}
BIT_VIEW = {"bfloat16": torch.int16, "float8_e4m3fn": torch.uint8, "float8_e5m2": torch.uint8}


def torch_dtype(name):
    if name not in DTYPES:
        raise CaseSkip("dtype %s is not supported by torch %s" % (name, torch.__version__))
    return DTYPES[name]


def native(arr, dtype=None):
    """A C-ordered, native-byte-order copy (rank 0 stays rank 0, unlike ascontiguousarray)."""
    dt = np.dtype(dtype) if dtype is not None else arr.dtype.newbyteorder("=")
    return np.array(arr, dtype=dt, order="C", copy=True)


def read_tensor(ds):
    """A dataset as a CPU tensor of its FORMAT.md dtype."""
    mark = ds.attrs.get("dtype")
    arr = np.asarray(ds[()])
    if mark is not None and as_str(mark) in BIT_STORED:
        name = as_str(mark)
        dt = torch_dtype(name)
        if arr.dtype.kind not in "iu" or arr.dtype.itemsize != np.dtype(BIT_STORED[name]).itemsize:
            raise ValueError("dataset %s: %s bit patterns stored as %s" % (ds.name, name, arr.dtype))
        bits = native(arr).view(np.int16 if BIT_STORED[name] == np.uint16 else np.uint8)
        return torch.from_numpy(bits).view(dt)
    if h5py.check_enum_dtype(ds.dtype) is not None:
        return torch.from_numpy(native(arr, np.bool_))
    if arr.dtype.kind in "fiub":
        if arr.dtype.kind == "u" and arr.dtype.itemsize > 1 and \
                "uint%d" % (8 * arr.dtype.itemsize) not in DTYPES:
            raise CaseSkip("dtype %s is not supported by torch %s" % (arr.dtype, torch.__version__))
        return torch.from_numpy(native(arr))
    raise CaseSkip("dataset %s has an element type torch cannot take (%s)" % (ds.name, arr.dtype))


def tensor_to_numpy(t):
    """(array, bit-pattern mark or None) in the storage form FORMAT.md expects."""
    if t.is_mkldnn:
        t = t.to_dense()
    t = t.contiguous()
    name = DTYPE_NAMES.get(t.dtype)
    if name in BIT_STORED:
        return t.view(BIT_VIEW[name]).numpy().view(BIT_STORED[name]), name
    return t.numpy(), None


# ---- the case file ---------------------------------------------------------------------

class Case:
    def __init__(self, path):
        with h5py.File(path, "r") as f:
            a = f.attrs
            version = int(as_py(a["parity_case_version"]))
            if version != 1:
                raise ValueError("case version %d (this worker reads version 1)" % version)
            self.op = as_str(a["op"])
            self.case_dtype = as_str(a["case_dtype"])
            self.input_names = [str(x) for x in as_list(a["inputs"])]
            self.out_dtype = str(as_list(a["output_dtypes"])[0])
            self.out_shape = [int(x) for x in as_list(a.get("output_shape", []))]
            self.params = {}
            self.raw_params = {}
            for key in a.keys():
                if key.startswith("param."):
                    self.raw_params[key[6:]] = a[key]
                    self.params[key[6:]] = as_py(a[key])
            if self.out_dtype not in DTYPES:
                raise CaseSkip("dtype %s is not supported by torch %s" %
                               (self.out_dtype, torch.__version__))
            self.inputs = [read_tensor(f[name]) for name in self.input_names]


class GraphCase(wb.GraphSpec):
    """A graph case file (FORMAT.md, "Graph cases"): its graph and its inputs as tensors."""

    def __init__(self, path):
        with h5py.File(path, "r") as f:
            super().__init__(f)
            if self.out_dtype not in DTYPES:
                raise CaseSkip("dtype %s is not supported by torch %s" %
                               (self.out_dtype, torch.__version__))
            self.inputs = [read_tensor(f[name]) for name in self.input_names]


class Graph(nn.Module):
    """A graph case's nodes as one module: each node the worker's module of its op, built
    from the values an eager pass gives it (some builders read their inputs' shapes), run
    in order on a list of values, the inputs first; the last node's value is the output.
    torch.compile traces the whole region and fuses it."""

    def __init__(self, case):
        super().__init__()
        names = list(case.input_names)
        values = list(case.inputs)
        self.steps = nn.ModuleList()
        self.args = []
        with torch.no_grad():
            for name, op, ins, params, _ in case.nodes:
                idx = [names.index(i) for i in ins]
                m = make_module(op, params, [values[i] for i in idx]).eval()
                values.append(m(*[values[i] for i in idx]))
                names.append(name)
                self.steps.append(m)
                self.args.append(idx)

    def forward(self, *xs):
        values = list(xs)
        for m, idx in zip(self.steps, self.args):
            values.append(m(*[values[i] for i in idx]))
        return values[-1]


def write_output(path, case, t):
    """Writes /out atomically in the storage form FORMAT.md expects (worker_base)."""
    arr, mark = tensor_to_numpy(t)
    wb.write_stored(path, case, arr, mark)


# ---- the ops as modules ----------------------------------------------------------------
#
# Each module holds the op's parameters as attributes: torch.jit.freeze turns them into
# graph constants (and folds the branches on `name`), torch.compile specializes on them.
# Optional tensor inputs (weight, bias, attn_mask) are Optional arguments.

class Unary(nn.Module):
    name: str
    approximate: str
    beta: float
    threshold: float
    alpha: float

    def __init__(self, name: str, approximate: str = "none", beta: float = 1.0,
                 threshold: float = 20.0, alpha: float = 1.0):
        super().__init__()
        self.name = name
        self.approximate = approximate
        self.beta = beta
        self.threshold = threshold
        self.alpha = alpha

    def forward(self, x: Tensor) -> Tensor:
        if self.name == "relu":
            return torch.relu(x)
        if self.name == "gelu":
            return F.gelu(x, approximate=self.approximate)
        if self.name == "silu":
            return F.silu(x)
        if self.name == "sigmoid":
            return torch.sigmoid(x)
        if self.name == "tanh":
            return torch.tanh(x)
        if self.name == "exp":
            return torch.exp(x)
        if self.name == "log":
            return torch.log(x)
        if self.name == "sqrt":
            return torch.sqrt(x)
        if self.name == "rsqrt":
            return torch.rsqrt(x)
        if self.name == "reciprocal":
            return torch.reciprocal(x)
        if self.name == "erf":
            return torch.erf(x)
        if self.name == "neg":
            return torch.neg(x)
        if self.name == "abs":
            return torch.abs(x)
        if self.name == "softplus":
            return F.softplus(x, beta=self.beta, threshold=self.threshold)
        if self.name == "elu":
            return F.elu(x, alpha=self.alpha)
        if self.name == "mish":
            return F.mish(x)
        raise RuntimeError("unknown unary op")


class Binary(nn.Module):
    name: str
    alpha: float

    def __init__(self, name: str, alpha: float = 1.0):
        super().__init__()
        self.name = name
        self.alpha = alpha

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        if self.name == "add":
            return torch.add(x, y, alpha=self.alpha)
        if self.name == "sub":
            return torch.sub(x, y, alpha=self.alpha)
        if self.name == "mul":
            return torch.mul(x, y)
        if self.name == "div":
            return torch.div(x, y)
        if self.name == "maximum":
            return torch.maximum(x, y)
        if self.name == "minimum":
            return torch.minimum(x, y)
        raise RuntimeError("unknown binary op")


class Reduce(nn.Module):
    """sum, mean, amax, amin, logsumexp over an explicit dim list."""
    name: str
    dim: List[int]
    keepdim: bool

    def __init__(self, name: str, dim: List[int], keepdim: bool):
        super().__init__()
        self.name = name
        self.dim = dim
        self.keepdim = keepdim

    def forward(self, x: Tensor) -> Tensor:
        if self.name == "sum":
            return torch.sum(x, self.dim, self.keepdim)
        if self.name == "mean":
            return torch.mean(x, self.dim, self.keepdim)
        if self.name == "amax":
            return torch.amax(x, self.dim, self.keepdim)
        if self.name == "amin":
            return torch.amin(x, self.dim, self.keepdim)
        if self.name == "logsumexp":
            return torch.logsumexp(x, self.dim, self.keepdim)
        raise RuntimeError("unknown reduction")


class Var(nn.Module):
    dim: List[int]
    correction: int
    keepdim: bool

    def __init__(self, dim: List[int], correction: int, keepdim: bool):
        super().__init__()
        self.dim = dim
        self.correction = correction
        self.keepdim = keepdim

    def forward(self, x: Tensor) -> Tensor:
        return torch.var(x, self.dim, correction=self.correction, keepdim=self.keepdim)


class Rowwise(nn.Module):
    """softmax, log_softmax, cumsum along one dim."""
    name: str
    dim: int

    def __init__(self, name: str, dim: int):
        super().__init__()
        self.name = name
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        if self.name == "softmax":
            return torch.softmax(x, self.dim)
        if self.name == "log_softmax":
            return torch.log_softmax(x, self.dim)
        if self.name == "cumsum":
            return torch.cumsum(x, self.dim)
        raise RuntimeError("unknown row op")


class LayerNorm(nn.Module):
    normalized_shape: List[int]
    eps: float

    def __init__(self, normalized_shape: List[int], eps: float):
        super().__init__()
        self.normalized_shape = normalized_shape
        self.eps = eps

    def forward(self, x: Tensor, weight: Optional[Tensor] = None,
                bias: Optional[Tensor] = None) -> Tensor:
        return F.layer_norm(x, self.normalized_shape, weight, bias, self.eps)


class RmsNorm(nn.Module):
    """Only built where torch has F.rms_norm (2.4 and later)."""
    normalized_shape: List[int]
    eps: Optional[float]

    def __init__(self, normalized_shape: List[int], eps: Optional[float]):
        super().__init__()
        self.normalized_shape = normalized_shape
        self.eps = eps

    def forward(self, x: Tensor, weight: Optional[Tensor] = None) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, weight, self.eps)


class Matmul(nn.Module):
    name: str

    def __init__(self, name: str):
        super().__init__()
        self.name = name

    def forward(self, a: Tensor, b: Tensor) -> Tensor:
        if self.name == "bmm":
            return torch.bmm(a, b)
        return torch.matmul(a, b)


class Linear(nn.Module):
    def forward(self, x: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
        return F.linear(x, weight, bias)


class Conv2d(nn.Module):
    stride: List[int]
    padding: List[int]
    padding_mode: str   # "" (numeric padding), "valid" or "same"
    dilation: List[int]
    groups: int

    def __init__(self, stride: List[int], padding: List[int], padding_mode: str,
                 dilation: List[int], groups: int):
        super().__init__()
        self.stride = stride
        self.padding = padding
        self.padding_mode = padding_mode
        self.dilation = dilation
        self.groups = groups

    def forward(self, x: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
        if self.padding_mode != "":
            return F.conv2d(x, weight, bias, self.stride, self.padding_mode, self.dilation,
                            self.groups)
        return F.conv2d(x, weight, bias, self.stride, self.padding, self.dilation, self.groups)


class Sdpa(nn.Module):
    """Only built where torch has F.scaled_dot_product_attention (2.0 and later)."""
    is_causal: bool
    has_scale: bool
    scale: float

    def __init__(self, is_causal: bool, scale: Optional[float]):
        super().__init__()
        self.is_causal = is_causal
        self.has_scale = scale is not None
        self.scale = 1.0 if scale is None else scale

    def forward(self, q: Tensor, k: Tensor, v: Tensor,
                attn_mask: Optional[Tensor] = None) -> Tensor:
        if self.has_scale:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask,
                                                  is_causal=self.is_causal, scale=self.scale)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask,
                                              is_causal=self.is_causal)


class Transpose(nn.Module):
    dim0: int
    dim1: int

    def __init__(self, dim0: int, dim1: int):
        super().__init__()
        self.dim0 = dim0
        self.dim1 = dim1

    def forward(self, x: Tensor) -> Tensor:
        return torch.transpose(x, self.dim0, self.dim1)


class Permute(nn.Module):
    dims: List[int]

    def __init__(self, dims: List[int]):
        super().__init__()
        self.dims = dims

    def forward(self, x: Tensor) -> Tensor:
        return x.permute(self.dims)


class Reshape(nn.Module):
    shape: List[int]

    def __init__(self, shape: List[int]):
        super().__init__()
        self.shape = shape

    def forward(self, x: Tensor) -> Tensor:
        return torch.reshape(x, self.shape)


class Cast(nn.Module):
    to: torch.dtype

    def __init__(self, to: torch.dtype):
        super().__init__()
        self.to = to

    def forward(self, x: Tensor) -> Tensor:
        return x.to(self.to)


# ---- from a case to a module: the worker's implementation map ---------------------------
#
# IMPLEMENTATIONS maps each op this worker runs (by parityfuzz's registry name) to a builder
# (parameters, inputs) -> nn.Module; parameter names and defaults are the registry's. It is
# the worker's only op list: the handshake answers parityfuzz's offer from it.

def unavailable_ops():
    """{op: reason} for ops of the map this torch cannot run."""
    out = {}
    if not hasattr(F, "scaled_dot_product_attention"):
        out["scaled_dot_product_attention"] = \
            "torch %s has no scaled_dot_product_attention (2.0+)" % torch.__version__
    if not hasattr(F, "rms_norm"):
        out["rms_norm"] = "torch %s has no rms_norm (2.4+)" % torch.__version__
    return out


def _int(p, name, default):
    v = p.get(name, default)
    if isinstance(v, list):
        if len(v) != 1:
            raise ValueError("parameter '%s' must be one integer, got %r" % (name, v))
        v = v[0]
    return int(v)


def _ints(p, name):
    """An int-or-list parameter as a list, or None when absent."""
    if name not in p:
        return None
    v = p[name]
    return [int(x) for x in v] if isinstance(v, list) else [int(v)]


def _float(p, name, default):
    v = p.get(name, default)
    if isinstance(v, list):
        if len(v) != 1:
            raise ValueError("parameter '%s' must be one number, got %r" % (name, v))
        v = v[0]
    return None if v is None else float(v)


def _pair(p, name, default):
    v = _ints(p, name)
    if v is None:
        return [default, default]
    return v * 2 if len(v) == 1 else v


def _unary(op):
    def build(p, inputs):
        approximate = str(p.get("approximate", "none")) if op == "gelu" else "none"
        return Unary(op, approximate, _float(p, "beta", 1.0), _float(p, "threshold", 20.0),
                     _float(p, "alpha", 1.0))
    return build


def _binary(op):
    return lambda p, inputs: Binary(op, _float(p, "alpha", 1.0))


def _reduce(op):
    def build(p, inputs):
        rank = inputs[0].dim()
        dim = _ints(p, "dim")
        if not dim:                               # absent or empty: every dim
            dim = list(range(rank)) if rank > 0 else []
        if rank == 0:
            dim = [0] if op == "logsumexp" else []
        return Reduce(op, dim, bool(_int(p, "keepdim", 0)))
    return build


def _var(p, inputs):
    dim = _ints(p, "dim")
    if not dim:
        dim = list(range(inputs[0].dim()))
    if "correction" in p:
        correction = _float(p, "correction", 1.0)
    else:
        correction = float(_int(p, "unbiased", 1))
    if correction != int(correction):
        raise CaseSkip("var: a non-integer correction (%g)" % correction)
    return Var(dim, int(correction), bool(_int(p, "keepdim", 0)))


def _rowwise(op):
    return lambda p, inputs: Rowwise(op, _int(p, "dim", -1))


def _norm_shape(p, inputs):
    shape = _ints(p, "normalized_shape")
    if shape is None:
        shape = list(inputs[1].shape) if len(inputs) > 1 else [int(inputs[0].shape[-1])]
    return shape


def _conv2d(p, inputs):
    pad = p.get("padding", 0)
    if isinstance(pad, str):
        padding, mode = [0, 0], pad
    else:
        padding, mode = _pair(p, "padding", 0), ""
    return Conv2d(_pair(p, "stride", 1), padding, mode, _pair(p, "dilation", 1),
                  _int(p, "groups", 1))


def _sdpa(p, inputs):
    scale = _float(p, "scale", None)
    if scale is not None and TORCH_MAJOR == 2 and int(torch.__version__.split(".")[1]) < 1:
        raise CaseSkip("scaled_dot_product_attention: 'scale' needs torch 2.1")
    return Sdpa(bool(_int(p, "is_causal", 0)), scale)


IMPLEMENTATIONS = {}
for _op in ("relu gelu silu sigmoid tanh exp log sqrt rsqrt reciprocal erf neg abs softplus "
            "elu mish").split():
    IMPLEMENTATIONS[_op] = _unary(_op)
for _op in "add sub mul div maximum minimum".split():
    IMPLEMENTATIONS[_op] = _binary(_op)
for _op in "sum mean amax amin logsumexp".split():
    IMPLEMENTATIONS[_op] = _reduce(_op)
for _op in "softmax log_softmax cumsum".split():
    IMPLEMENTATIONS[_op] = _rowwise(_op)
IMPLEMENTATIONS.update({
    "var": _var,
    "layer_norm": lambda p, inputs: LayerNorm(_norm_shape(p, inputs), _float(p, "eps", 1e-5)),
    "rms_norm": lambda p, inputs: RmsNorm(_norm_shape(p, inputs), _float(p, "eps", None)),
    "matmul": lambda p, inputs: Matmul("matmul"),
    "bmm": lambda p, inputs: Matmul("bmm"),
    "linear": lambda p, inputs: Linear(),
    "conv2d": _conv2d,
    "scaled_dot_product_attention": _sdpa,
    "transpose": lambda p, inputs: Transpose(_int(p, "dim0", 0), _int(p, "dim1", 1)),
    "permute": lambda p, inputs: Permute(_ints(p, "dims")),
    "reshape": lambda p, inputs: Reshape(_ints(p, "shape")),
    "cast": lambda p, inputs: Cast(torch_dtype(str(p["to"]))),
})


def make_module(op, p, inputs):
    """The op with parameters p (registry names and defaults) as an nn.Module."""
    build = IMPLEMENTATIONS.get(op)
    if build is None:
        raise CaseSkip("op %s is not implemented by this worker" % op)
    return build(p, inputs)


def params_key(p):
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in p.items()))


# ---- the sides -------------------------------------------------------------------------

def compile_seconds():
    """Seconds torch.compile has spent compiling in this process (dynamo's own record of
    each frame's compilation, tracing through Inductor's code generation and the C++
    build), or None where this torch has no such record (1.13 has no compiler)."""
    utils = getattr(getattr(torch, "_dynamo", None), "utils", None)
    metrics = getattr(utils, "compilation_time_metrics", None)
    if metrics is None:
        return None
    return float(sum(metrics.get("_compile.compile_inner", ())))


class Worker:
    def __init__(self, mode, eager_builtin=False):
        self.mode = mode
        self.eager_builtin = eager_builtin   # parityfuzz runs eager sides (--eager builtin)
        self.cache = {}
        self.skip = unavailable_ops()
        self.crash_on = set(filter(None, os.environ.get("PARITY_WORKER_CRASH_ON", "").split(",")))
        self.hang_on = set(filter(None, os.environ.get("PARITY_WORKER_HANG_ON", "").split(",")))
        self.side_s = {"eager": 0.0, "compiled": 0.0}   # wall time per side, logged at exit
        self.cases = 0
        if mode.startswith("compile"):
            dyn = getattr(torch, "_dynamo", None)
            if dyn is not None:
                # Every case of an op shares one forward code object: let the guards
                # pile up instead of silently falling back to eager.
                for knob in ("cache_size_limit", "accumulated_cache_size_limit"):
                    if hasattr(dyn.config, knob):
                        setattr(dyn.config, knob, max(getattr(dyn.config, knob), 4096))

    def compiled(self, case, inputs):
        key = (case.op, params_key(case.params),
               tuple(DTYPE_NAMES.get(t.dtype, str(t.dtype)) for t in inputs),
               tuple(t.dim() for t in inputs))
        m = self.cache.get(key)
        if m is None:
            m = make_module(case.op, case.params, inputs).eval()
            if self.mode == "freeze":
                m = torch.jit.freeze(torch.jit.script(m).eval())
                m = torch.jit.optimize_for_inference(m)
            elif self.mode == "compile":
                m = torch.compile(m)
            elif self.mode == "compile-dynamic":
                # symbolic shapes from the start: one graph per op, parameters, dtypes
                # and ranks, instead of one per shape
                m = torch.compile(m, dynamic=True)
            self.cache[key] = m
        return m

    def run_graph(self, side, case_path, out_path):
        """A graph case's compiled side (its eager side is parityfuzz's builtin kernels)."""
        if side != "compiled":
            raise ValueError("graph cases run their compiled side only (got %s)" % side)
        case = GraphCase(case_path)
        for _, op, _, _, _ in case.nodes:
            if op in self.skip:
                raise CaseSkip(self.skip[op])
        key = ("graph", case.family, tuple((op, params_key(p)) for _, op, _, p, _ in case.nodes),
               tuple(DTYPE_NAMES.get(t.dtype, str(t.dtype)) for t in case.inputs),
               tuple(t.dim() for t in case.inputs))
        t0 = time.perf_counter()
        compiled0 = compile_seconds()
        m = self.cache.get(key)
        if m is None:
            m = Graph(case).eval()
            if self.mode == "freeze":
                m = torch.jit.optimize_for_inference(
                    torch.jit.freeze(torch.jit.trace(m, tuple(case.inputs), check_trace=False)))
            elif self.mode.startswith("compile"):
                m = torch.compile(m, dynamic=self.mode == "compile-dynamic")
            self.cache[key] = m
        with torch.no_grad():
            y = m(*case.inputs)
        self.side_s["compiled"] += time.perf_counter() - t0
        self.cases += 1
        got = DTYPE_NAMES.get(y.dtype, str(y.dtype))
        if got != case.out_dtype or list(y.shape) != case.out_shape:
            raise ValueError("the graph returned %s %s, the case expects %s %s" %
                             (got, list(y.shape), case.out_dtype, case.out_shape))
        write_output(out_path, case, y)
        return None if compiled0 is None else compile_seconds() - compiled0

    def run(self, side, case_path, out_path):
        if wb.case_version(case_path) == 2:
            return self.run_graph(side, case_path, out_path)
        case = Case(case_path)
        if case.op in self.skip:
            raise CaseSkip(self.skip[case.op])
        inputs = case.inputs
        t0 = time.perf_counter()
        compiled0 = compile_seconds()
        try:
            self._run_side(side, case, inputs, out_path)
        finally:
            if side in self.side_s:
                self.side_s[side] += time.perf_counter() - t0
                self.cases += side == "compiled"
        # the request's share of dynamo's compile time (a new graph, or a recompile on a
        # guard that failed); None where this torch keeps no such record
        return None if compiled0 is None else compile_seconds() - compiled0

    def report(self):
        # the compiled side's time beyond eager's is, on a compiler, mostly compilation
        log("%d cases: eager %.2f s, compiled %.2f s (%s)" %
            (self.cases, self.side_s["eager"], self.side_s["compiled"], self.mode))

    def _run_side(self, side, case, inputs, out_path):
        if side == "eager":
            try:
                y = make_module(case.op, case.params, inputs)(*inputs)
            except RuntimeError as e:
                if "not implemented for" in str(e):
                    raise CaseSkip(str(e))
                raise
        elif side == "compiled":
            if case.op in self.crash_on:
                os.kill(os.getpid(), signal.SIGSEGV)
            if case.op in self.hang_on:
                while True:
                    time.sleep(3600)
            try:
                y = self.compiled(case, inputs)(*inputs)
            except RuntimeError as e:
                # with eager=builtin no torch eager run said first that torch lacks the
                # kernel for this dtype: that is a skip here too, not a compiler's error
                if self.eager_builtin and "not implemented for" in str(e):
                    raise CaseSkip(str(e))
                raise
        else:
            raise ValueError("unknown side '%s'" % side)
        if not isinstance(y, torch.Tensor):
            raise TypeError("the op returned %s, not a tensor" % type(y).__name__)
        got = DTYPE_NAMES.get(y.dtype, str(y.dtype))
        if got != case.out_dtype or list(y.shape) != case.out_shape:
            raise ValueError("the op returned %s %s, the case expects %s %s" %
                             (got, list(y.shape), case.out_dtype, case.out_shape))
        write_output(out_path, case, y)


def main():
    default_mode = "compile" if TORCH_MAJOR >= 2 else "freeze"
    ap = argparse.ArgumentParser(description="parityfuzz worker: eager PyTorch vs compiled")
    ap.add_argument("--mode", choices=("freeze", "compile", "compile-dynamic", "eager"),
                    default=default_mode,
                    help="what the compiled side runs (default: %s)" % default_mode)
    ap.add_argument("--eager", choices=("torch", "builtin"), default="torch",
                    help="what the eager side runs: plain PyTorch (default), or parityfuzz's "
                         "builtin IEEE kernels (eager=builtin), so that a defect torch's eager "
                         "and compiled sides share (one oneDNN kernel) is judged, not hidden")
    args = ap.parse_args()
    if args.mode.startswith("compile") and not hasattr(torch, "compile"):
        log("--mode compile needs torch >= 2 (this is %s)" % torch.__version__)
        return 2
    w = Worker(args.mode, args.eager == "builtin")
    name = "torch-%s-%s%s" % (torch.__version__, args.mode,
                              "-eager-builtin" if args.eager == "builtin" else "")
    try:
        return wb.serve("torch_worker", name, IMPLEMENTATIONS, DTYPES, w.run, w.skip,
                        eager_builtin=args.eager == "builtin", graphs=True)
    finally:
        w.report()


if __name__ == "__main__":
    wb.run_main(main)
