"""parity_torch - write parity captures (formats/FORMAT.md) of PyTorch models.

Importable without installing (sys.path.insert(0, "formats")); needs torch and h5py, and
works with Debian's torch 1.13 and current torch alike.

    import parity_torch as pt
    pt.capture_eager(model, (x,), "eager.h5", model_name="mlp")
    pt.capture_compiled(model, (x,), "compiled.h5", compile_leaf=pt.torchscript_freeze)
    # then: paritydiff eager.h5 compiled.h5

Eager side: a TorchDispatchMode records every aten op that runs (functional calls and
residual adds included; in-place ops with the data they produced at that moment), each
output with `op` (the aten overload name, which paritydiff's registry maps to its own op),
`inputs` (graph inputs as /input/K and parameters as /<module path>/<name>, recorded once,
by identity), `order`, and the op's non-tensor arguments under their aten schema names.
A tensor is named by the module that ran the op and an op index (/fc1/0.t), except the
output of a module, which is /<module path>/out (/out for the model's own output); when one
tensor is the output of nested modules, the outermost names it, and a module that returns
one of its inputs unchanged (dropout in eval) names nothing.

Compiled side: the model with each leaf module replaced by compile_leaf(leaf, example
inputs) (per module: each leaf's output survives) or, with whole_model=True, the model as a
whole (only /out survives), recorded at module boundaries under the same names, with the
graph inputs and parameters, so pairs line up. A compiled tensor gets an eager name only
because it computes the same module's output.

torch's decomposition of linear, addmm(b, x, t(W)) or mm(x, t(W)), is written as op
"linear" over x, W and b (the t stays in the capture as its own tensor); for x of rank > 2,
view(x) -> addmm -> view back, the last view is the linear over x.

Multi-output ops keep output 0 under the op's name; further tensor outputs are written as
/<name>#K: a split's as the slices of its input they are (op aten.slice.Tensor), the others
(a norm's mean and rstd, max_pool's indices, attention's logsumexp) with `output_of` and no
`op`, so no model judges them as if they were output 0, and only when an op consumed them.
"""
import contextlib
import datetime
import importlib
import itertools
import warnings

import h5py
import numpy
import torch

try:
    from torch.utils._python_dispatch import TorchDispatchMode
except ImportError:  # pragma: no cover - torch < 1.13
    TorchDispatchMode = None
try:   # torch >= 2.0; torch 1.13 has no torch.compile to step aside for
    from torch.utils._python_dispatch import _disable_current_modes as _outside_dispatch_modes
except ImportError:
    _outside_dispatch_modes = contextlib.nullcontext

PARITY_FORMAT = 1

# Factory ops whose output holds no defined data (batch_norm's eval-mode save_mean in
# torch 1.13): recorded, they would differ at random between runs.
_UNDEFINED = {"empty", "empty_strided", "new_empty", "new_empty_strided", "empty_like"}

# torch's fused fast paths (TransformerEncoderLayer and MultiheadAttention with batch_first
# under no_grad): one aten call for a whole layer, which no registry op models.
_FUSED = {"_transformer_encoder_layer_fwd", "_native_multi_head_attention",
          "_transformer_decoder_only_layer_fwd", "_native_decoder_only_multi_head_attention"}

# The shape-only ops (the registry's reshape rule).
_RESHAPES = {"aten.view.default", "aten._unsafe_view.default", "aten._reshape_alias.default",
             "aten.reshape.default"}

# Stored as numpy stores them (float16 as IEEE half); bfloat16 goes as its bits (_to_numpy).
_NATIVE = (torch.float64, torch.float32, torch.float16, torch.int8, torch.int16, torch.int32,
           torch.int64, torch.uint8, torch.bool)


def _to_numpy(t):
    """(array, dtype attribute or None) for a tensor, as FORMAT.md stores it."""
    t = t.detach()
    if t.is_mkldnn:
        t = t.to_dense()
    t = t.cpu().contiguous()
    # copies: t.numpy() shares the tensor's memory, and an in-place op run later (relu_)
    # would rewrite what was recorded for the op that produced the tensor
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(numpy.uint16).copy(), "bfloat16"
    if t.dtype in _NATIVE:
        return t.numpy().copy(), None
    raise TypeError("parity_torch: dtype %s has no capture form" % t.dtype)


def _attr_value(v):
    """An aten argument as an HDF5 attribute value, or None when it has none."""
    if isinstance(v, bool):
        return numpy.int64(int(v))
    if isinstance(v, int):
        return numpy.int64(v)
    if isinstance(v, float):
        return numpy.float64(v)
    if isinstance(v, str):
        return v
    if isinstance(v, torch.dtype):
        return str(v).replace("torch.", "")
    if isinstance(v, (list, tuple)) and v and all(isinstance(x, bool) for x in v):
        return numpy.array([int(x) for x in v], dtype=numpy.int64)
    if isinstance(v, (list, tuple)) and v and all(isinstance(x, int) for x in v):
        return numpy.array(v, dtype=numpy.int64)
    if isinstance(v, (list, tuple)) and v and all(isinstance(x, (int, float)) for x in v):
        return numpy.array(v, dtype=numpy.float64)
    return None


def _segment(name):
    """A module's name as a path segment: a submodule called `out` (or `input`) would make
    its group collide with the output dataset of its parent (/out/out under the dataset
    /out; /input/0), so those two names get an `@` (/out@/out); FORMAT.md says so."""
    if name in ("out", "input"):
        return name + "@"
    return name


def _flatten(value, key=()):
    """The tensors of a module's output, each with the path of keys that reaches it: a
    tensor; a tuple or list (index); a dict, transformers' ModelOutput (an OrderedDict of
    the fields that are set) or a dataclass (field name); nested as deep as they go. Other
    values (None, numbers, strings) hold no tensor."""
    import dataclasses
    if isinstance(value, torch.Tensor):
        return [(key, value)]
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, (tuple, list)):
        items = list(enumerate(value))
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    else:
        return []
    out = []
    for k, v in items:
        out.extend(_flatten(v, key + (str(k),)))
    return out


def _output_names(output):
    """[(leaf name, tensor)] for a module's output: `out` when it holds one tensor (a
    tensor, or MultiheadAttention's (out, None)), else `out_<keys>` per tensor, keys joined
    by `_` (out_0, out_1_0 for an LSTM's (out, (h, c)), out_last_hidden_state for a
    ModelOutput). A tensor reached twice is named once, by its first key."""
    flat, seen = [], set()
    for key, t in _flatten(output):
        if id(t) not in seen:
            seen.add(id(t))
            flat.append((key, t))
    if len(flat) == 1:
        return [("out", flat[0][1])]
    return [("out_" + "_".join(k.replace("/", "_") for k in key), t) for key, t in flat]


class _Record:
    __slots__ = ("name", "data", "op", "inputs", "order", "attrs", "output_of", "version")

    def __init__(self, name, data, op=None, inputs=None, order=None, attrs=None, output_of=None):
        self.name, self.data, self.op, self.inputs = name, data, op, inputs
        self.order, self.attrs, self.output_of = order, attrs or {}, output_of
        self.version = None           # the tensor's version counter when data was taken


def _version_of(t):
    """t's in-place version counter (shared with its views), None where it has none
    (tensors made under inference_mode)."""
    try:
        return t._version
    except (RuntimeError, AttributeError):
        return None


class _Recorder:
    """Names tensors by identity and keeps what a capture file will hold."""

    def __init__(self, model):
        self.records = []             # in execution order
        self.by_id = {}               # id(tensor) -> record (the latest that produced it)
        self.alive = []               # keeps recorded tensors alive, so ids stay unique
        self.stack = []               # module paths being run
        self.op_index = {}            # (module path, op) -> calls of that op in it so far
        self.calls = {}               # module path -> times its forward ran
        self.order = itertools.count()
        self.params = {}
        for mpath, mod in model.named_modules():
            for pname, p in itertools.chain(mod.named_parameters(recurse=False),
                                            mod.named_buffers(recurse=False)):
                if p is not None and id(p) not in self.params:
                    self.params[id(p)] = (self._join(mpath, pname), p)
        self.names = set()
        self.paused = 0               # > 0 while a compiled leaf runs: its insides are fused
        self.entered = []             # per module being run: its tensor inputs' records then

    def snapshot(self, t):
        """_to_numpy with recording paused: the copy is ours, not the model's op."""
        self.paused += 1
        try:
            return _to_numpy(t)
        finally:
            self.paused -= 1

    def add_params(self):
        """Every parameter and buffer, once, under its module path (both sides hold them,
        so compiled inputs line up and the local check can run)."""
        for name, p in self.params.values():
            data, dt = self.snapshot(p)
            self.add(_Record(name, data, attrs={"dtype": dt} if dt else {}), p)

    @staticmethod
    def _join(mpath, leaf):
        return "/" + "/".join([_segment(s) for s in mpath.split(".") if s] + [leaf])

    def unique(self, name):
        base, k = name, 1
        while name in self.names:
            name = "%s.%d" % (base, k)
            k += 1
        self.names.add(name)
        return name

    def add(self, rec, tensor=None):
        rec.name = self.unique(rec.name)
        self.records.append(rec)
        if tensor is not None:
            rec.version = _version_of(tensor)
            self.by_id[id(tensor)] = rec
            self.alive.append(tensor)
        return rec

    def record_of(self, t):
        """The record of a tensor an op consumes: recorded, a parameter, else a constant.
        Inputs hold records, not names, and take their names when the file is written: a
        module's output is renamed /<path>/out after its consumers may have named it."""
        rec = self.by_id.get(id(t))
        if rec is not None:
            return rec
        if id(t) in self.params:
            name, p = self.params[id(t)]
            data, dt = self.snapshot(p)
            return self.add(_Record(name, data, attrs={"dtype": dt} if dt else {}), p)
        mpath = self.stack[-1] if self.stack else ""
        data, dt = self.snapshot(t)
        return self.add(_Record(self._join(mpath, "const"), data,
                                attrs={"dtype": dt} if dt else {}), t)

    def add_input(self, k, t):
        data, dt = self.snapshot(t)
        self.add(_Record("/input/%d" % k, data, attrs={"dtype": dt} if dt else {}), t)

    def mutated_since(self, rec, o):
        """Has o changed since rec took its data? Not when its version counter has not
        moved; else the data tells (an in-place op's own record sees the counter before
        torch bumps it, above the dispatch mode)."""
        now = _version_of(o)
        if rec.version is not None and now == rec.version:
            return False
        data, _ = self.snapshot(o)
        return data.shape != rec.data.shape or data.tobytes() != rec.data.tobytes()

    def passes_through(self, o, inputs, entry):
        """Did the module return input o as it got it (dropout in eval)? Not when an op in
        it changed o in place (ReLU(inplace=True)): then o's record is a newer one."""
        if not any(o is x for x in inputs if isinstance(x, torch.Tensor)):
            return False
        return entry is None or self.by_id.get(id(o)) is entry.get(id(o))

    def module_output(self, mpath, inputs, output, entry=None):
        """Names the records behind a module's output /<path>/out (outermost wins); an
        output of several tensors (tuples, dicts, ModelOutput, nested) names each
        /<path>/out_<keys> (_output_names). entry: the records its tensor inputs had when
        it was entered."""
        outs = _output_names(output)
        if not outs:
            return
        n = self.calls.get(mpath, 0)
        for leaf, o in outs:
            if self.passes_through(o, inputs, entry):
                continue
            rec = self.by_id.get(id(o))
            if rec is None:
                continue
            if self.mutated_since(rec, o):
                # changed through a view after its op recorded it (y[..., -k:] = 0): the
                # module's output is what it holds now, a tensor of its own without an op
                data, dt = self.snapshot(o)
                rec = self.add(_Record(rec.name + "~", data, order=next(self.order),
                                       attrs={"dtype": dt} if dt else {}), o)
            want = self._join(mpath, leaf) + ("" if n <= 1 else ".%d" % (n - 1))
            if rec.name != want:
                self.names.discard(rec.name)
                rec.name = self.unique(want)

    def hooks(self, model, on_compiled_output=None):
        """Pre and post hooks on every module: the module stack, call counts, output names.
        A compiled leaf (_Compiled) pauses recording while it runs; its output is named by
        on_compiled_output(module, args, out, path, entry)."""
        handles = []
        for mpath, mod in model.named_modules():
            compiled = isinstance(mod, _Compiled)

            def pre(m, args, mpath=mpath, compiled=compiled):
                self.calls[mpath] = self.calls.get(mpath, 0) + 1
                self.stack.append(mpath)
                self.entered.append({id(x): self.by_id.get(id(x)) for x in args
                                     if isinstance(x, torch.Tensor)})
                if compiled:
                    self.paused += 1

            def post(m, args, out, mpath=mpath, compiled=compiled):
                self.stack.pop()
                entry = self.entered.pop()
                if compiled:
                    self.paused -= 1
                    on_compiled_output(m, args, out, mpath, entry)
                else:
                    self.module_output(mpath, args, out, entry)
            handles.append(mod.register_forward_pre_hook(pre))
            handles.append(mod.register_forward_hook(post))
        return handles


def _op_attrs(func, args, kwargs):
    """Non-tensor arguments under their schema names; tensors in argument order."""
    attrs, tensors = {}, []
    schema = getattr(func, "_schema", None)
    names = [a.name for a in schema.arguments] if schema is not None else []
    values = list(args) + [None] * max(0, len(names) - len(args))
    first = next((a for a in args if isinstance(a, torch.Tensor)), None)
    for i, name in enumerate(names):
        v = kwargs.get(name, values[i] if i < len(values) else None)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and first is not None and \
                str(schema.arguments[i].type) == "Tensor":
            # a Python number where the schema has a Tensor (x * 0.1): an operand, a 0-d
            # tensor holding the number exactly (float64 beside a float tensor). Kernels
            # round it to the opmath type (torch 2.x) or to the tensor's dtype (1.13): the
            # registry's bound allows both (tolerance/op_binary.c), which it cannot when
            # the capture has already rounded it to bfloat16
            v = torch.tensor(v, dtype=torch.float64 if first.is_floating_point()
                             else first.dtype)
        if isinstance(v, torch.Tensor):
            tensors.append(v)
        elif isinstance(v, (list, tuple)) and v and all(isinstance(x, torch.Tensor) for x in v):
            tensors.extend(v)
        elif v is not None:
            a = _attr_value(v)
            if a is not None:
                attrs[name] = a
    if schema is None:
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
    return attrs, tensors


def _piece(short, attrs, j, outs, tensors):
    """Output j of a layout op with several outputs as the single-output op it is, so every
    output carries an `op` the registry judges exactly (none compared bit for bit as if it
    were an input): chunk j of split / split_with_sizes is slice(dim, start, end) of the
    input, and output j of unbind(dim) is select(dim, j). (op, attrs), or None for other
    ops. split's output 0 keeps the registry's own split."""
    if short in ("split", "unsafe_split") and "split_size" in attrs:
        if j == 0:
            return None
        dim = int(attrs.get("dim", 0))
        start = j * int(attrs["split_size"])
    elif short in ("split_with_sizes", "unsafe_split_with_sizes") and "split_sizes" in attrs:
        dim = int(attrs.get("dim", 0))
        start = int(sum(int(x) for x in numpy.atleast_1d(attrs["split_sizes"])[:j]))
    elif short == "unbind":
        dim = int(attrs.get("dim", 0))
        return "aten.select.int", {"dim": numpy.int64(dim), "index": numpy.int64(j)}
    else:
        return None
    size = outs[j].shape[dim]
    return "aten.slice.Tensor", {"dim": numpy.int64(dim), "start": numpy.int64(start),
                                 "end": numpy.int64(start + size), "step": numpy.int64(1)}


def _op_name(func):
    """The capture's op: the aten overload name (aten.addmm.default), which the registry
    maps to its own ops (the dispatch mode rewrites convolution and linear's
    decomposition on top of it)."""
    return "aten.%s" % str(func).split("aten.", 1)[-1] if "aten" in str(func) else str(func)


try:
    from torch.overrides import TorchFunctionMode
except ImportError:  # pragma: no cover - torch < 1.13
    TorchFunctionMode = None


@contextlib.contextmanager
def _fast_paths(enabled):
    """Runs the block with torch's fused fast paths on or off. Off, TransformerEncoderLayer
    and MultiheadAttention take their op-by-op path, the same function, so every op is
    recorded and judged. torch >= 2.1 has a switch; torch 1.13 has none, but skips the fast
    path whenever has_torch_function is true, which an active TorchFunctionMode makes it
    (this one passes every call through unchanged)."""
    if enabled:
        yield
        return
    mha = getattr(torch.backends, "mha", None)
    if mha is not None and hasattr(mha, "set_fastpath_enabled"):
        was = mha.get_fastpath_enabled()
        mha.set_fastpath_enabled(False)
        try:
            yield
        finally:
            mha.set_fastpath_enabled(was)
        return

    class PassThrough(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))
    with PassThrough():
        yield


if TorchDispatchMode is not None:
    class _EagerMode(TorchDispatchMode):
        def __init__(self, rec):
            super().__init__()
            self.rec = rec

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if self.rec.paused or str(func).split(".")[1 if "aten." in str(func) else 0] in _UNDEFINED:
                return func(*args, **kwargs)
            attrs, tensors = _op_attrs(func, args, kwargs)
            inputs = [self.rec.record_of(t) for t in tensors]
            out = func(*args, **kwargs)
            outs = out if isinstance(out, (tuple, list)) else (out,)
            mpath = self.rec.stack[-1] if self.rec.stack else ""
            opname = _op_name(func)
            if opname == "aten.convolution.default" and not attrs.get("transposed", 1) and \
                    tensors[0].dim() == 4:
                opname = "conv2d"
            if opname == "aten._scaled_dot_product_flash_attention_for_cpu.default" and \
                    len(tensors) >= 2 and tensors[0].dim() >= 3 and tensors[1].dim() >= 3 and \
                    tensors[0].shape[-3] != tensors[1].shape[-3]:
                # torch's CPU flash kernel groups query heads over fewer k/v heads by itself
                # (sdpa(enable_gqa=True) reaches it with k, v as given): the registry's op
                # takes the grouping as enable_gqa
                attrs["enable_gqa"] = numpy.int64(1)
            if opname == "aten._to_copy.default" and isinstance(out, torch.Tensor):
                attrs["to"] = str(out.dtype).replace("torch.", "")   # the registry's cast
                attrs.pop("dtype", None)   # the capture's own dtype attribute marks storage
            opname, inputs, attrs = self.as_linear(opname, tensors, inputs, attrs)
            opname, inputs, attrs = self.as_linear_nd(opname, tensors, out, inputs, attrs)
            short = opname.split(".")[1] if opname.startswith("aten.") else opname
            # counted per op, so an op one side inserts (autocast's casts, a copy to a
            # layout) does not shift the names of the ops both sides run
            k = self.rec.op_index.get((mpath, short), 0)
            self.rec.op_index[(mpath, short)] = k + 1
            if short in _FUSED:
                warnings.warn("parity_torch: torch ran its fused fast path %s in /%s; paritydiff "
                              "has no model for it (per-dtype tolerance only); capture with "
                              "fastpath=False to record and judge its ops"
                              % (opname, mpath.replace(".", "/")), stacklevel=2)
            first = None
            for j, o in enumerate(outs):
                if not isinstance(o, torch.Tensor) or (j > 0 and o.numel() == 0):
                    continue    # an auxiliary output with nothing in it (eval-mode stats)
                data, dt = _to_numpy(o)
                a = dict(attrs)
                if dt:
                    a["dtype"] = dt
                piece = _piece(short, attrs, j, outs, tensors)
                if first is None:
                    pop, pattrs = piece if piece else (opname, a)
                    if piece and dt:
                        pattrs["dtype"] = dt
                    first = self.rec.add(_Record(self.rec._join(mpath, "%d.%s" % (k, short)),
                                                 data, pop, inputs if not piece else inputs[:1],
                                                 next(self.rec.order), pattrs), o)
                elif piece:
                    pop, pattrs = piece
                    if dt:
                        pattrs["dtype"] = dt
                    self.rec.add(_Record(first.name + "#%d" % j, data, pop, inputs[:1],
                                         next(self.rec.order), pattrs), o)
                else:
                    a = {"dtype": dt} if dt else {}
                    self.rec.add(_Record(first.name + "#%d" % j, data, attrs=a,
                                         output_of=first), o)
            return out

        def as_linear_nd(self, opname, tensors, out, inputs, attrs):
            """linear over x of rank > 2 is view(x) -> addmm -> view back: the last view
            is written as linear over x itself, W and b (the same function of the inputs
            the compiled module was given)."""
            if opname not in _RESHAPES or not isinstance(out, torch.Tensor):
                return opname, inputs, attrs
            lin = self.rec.by_id.get(id(tensors[0]))
            if lin is None or lin.op != "linear" or not lin.inputs:
                return opname, inputs, attrs
            flat = lin.inputs[0]
            if flat.op not in _RESHAPES or len(flat.inputs) != 1:
                return opname, inputs, attrs
            src = flat.inputs[0]
            if tuple(src.data.shape[:-1]) != tuple(out.shape[:-1]):
                return opname, inputs, attrs
            return "linear", [flat.inputs[0]] + lin.inputs[1:], {}

        def as_linear(self, opname, tensors, inputs, attrs):
            """torch decomposes linear(x, W, b) into addmm(b, x, t(W)) (mm without a bias):
            that call is written as the linear it is, over x, W and b, so the compiled side,
            which holds W but never t(W), can be judged against its own inputs."""
            if opname not in ("aten.addmm.default", "aten.mm.default"):
                return opname, inputs, attrs
            mat2 = tensors[-1]
            t_rec = self.rec.by_id.get(id(mat2))
            if t_rec is None or t_rec.op != "aten.t.default" or len(t_rec.inputs) != 1:
                return opname, inputs, attrs
            if opname == "aten.addmm.default":
                if attrs.get("beta", 1) != 1 or attrs.get("alpha", 1) != 1 or \
                        tensors[0].dim() != 1:
                    return opname, inputs, attrs
                return "linear", [inputs[1], t_rec.inputs[0], inputs[0]], {}
            return "linear", [inputs[0], t_rec.inputs[0]], {}


def _write(path, rec, side, identity, outcomes=None):
    outcomes = dict(outcomes or {})
    names = {r.name for r in rec.records}
    for name, rule in outcomes.items():
        if name not in names or not isinstance(rule, str):
            raise ValueError("parity_torch: outcome %r on %s: %s" % (
                rule, name, "no such tensor in this capture (%s)" % side if name not in names
                else "the rule must be a string (argmax, topk:K, threshold:T, tokens)"))
    tmp = path + ".tmp"
    try:
        _write_file(tmp, rec, side, identity, outcomes)
    except BaseException:
        import os
        if os.path.exists(tmp):
            os.remove(tmp)   # a failed capture leaves nothing behind
        raise
    import os
    os.replace(tmp, path)


def _write_file(tmp, rec, side, identity, outcomes):
    with h5py.File(tmp, "w") as f:
        f.attrs["parity_format"] = PARITY_FORMAT
        f.attrs["side"] = side
        for key, value in identity.items():
            if value is not None:
                f.attrs[key] = value if isinstance(value, (int, float, numpy.ndarray)) \
                    else str(value)
        consumed = {id(i) for r in rec.records for i in (r.inputs or ())}
        for r in rec.records:
            if r.output_of is not None and id(r) not in consumed:
                continue   # an auxiliary output nothing read (a norm's mean, sdpa's lse)
            d = f.create_dataset(r.name, data=r.data)
            if r.op:
                d.attrs["op"] = r.op
            if r.inputs is not None:
                d.attrs["inputs"] = numpy.array([i.name for i in r.inputs],
                                                dtype=h5py.string_dtype())
            if r.order is not None:
                d.attrs["order"] = numpy.int64(r.order)
            if r.output_of:
                d.attrs["output_of"] = r.output_of.name
            for key, value in r.attrs.items():
                d.attrs[key] = value
            if r.name in outcomes:
                d.attrs["outcome"] = outcomes[r.name]


def _identity(model, side, compiler, extra):
    ident = {
        "framework": "pytorch",
        "framework_version": str(torch.__version__),
        "device": "cpu",
        "model": type(model).__name__,
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "compiler": compiler if side == "compiled" else "eager",
    }
    ident.update({k: v for k, v in extra.items() if v is not None})
    return ident


def capture_eager(module, inputs, path, fastpath=False, steady_calls=0, steady_inputs=None,
                  outcomes=None, **identity):
    """Runs module(*inputs) eagerly under no_grad and writes every aten op to path.
    fastpath: let torch take its fused fast paths (one op for a whole encoder layer, which
    has no model); off by default, so the layer's own ops are recorded (root attribute
    fastpath = "off" or "on"). steady_calls, steady_inputs: time that many plain calls after
    the recorded one (_steady_state; 0, the default, times nothing and writes no key).
    outcomes: {tensor name: rule} written as the tensor attribute `outcome` (GATE.md,
    "Outcome parity"): {"/out": "argmax"}. identity: root attributes (model, workload,
    commit, ...)."""
    model = module
    if TorchDispatchMode is None:
        raise RuntimeError("parity_torch needs torch >= 1.13 (TorchDispatchMode)")
    model.eval()
    rec = _Recorder(model)
    for k, t in enumerate(inputs):
        rec.add_input(k, t)
    rec.add_params()
    handles = rec.hooks(model)
    try:
        with torch.no_grad(), _fast_paths(fastpath), _EagerMode(rec):
            out = model(*inputs)
    finally:
        for h in handles:
            h.remove()
    identity["fastpath"] = "on" if fastpath else "off"
    _name_outputs(rec, out, add_missing=False)
    ident = _identity(model, "eager", None, identity)
    with _timing_fast_paths(fastpath):
        ident.update(_steady_state(model, inputs, steady_calls, steady_inputs, dynamo=False))
    _write(path, rec, "eager", ident, outcomes)
    return out


def _name_outputs(rec, out, add_missing):
    """Names the model's outputs /out, or /out_<keys> for a dict, ModelOutput, tuple or
    nested output (_output_names), on both sides alike. add_missing (the compiled side,
    whose compiled callable ran unrecorded): a tensor with no record gets one. A graph input
    or parameter returned as it is keeps its own name."""
    for leaf, t in _output_names(out):
        want = "/" + leaf
        r = rec.by_id.get(id(t))
        if r is None:
            if add_missing:
                data, dt = rec.snapshot(t)
                rec.add(_Record(want, data, attrs={"dtype": dt} if dt else {}), t)
            continue
        if r.name == want or r.name.startswith("/input/") or id(t) in rec.params:
            continue
        rec.names.discard(r.name)
        r.name = rec.unique(want)


class _Compiled(torch.nn.Module):
    """A compiled leaf in the module tree. Its parent may read the leaf's attributes
    (TransformerEncoderLayer reads norm1.eps to pick its fast path): they come from the
    original leaf, which is not a submodule, so hooks never see its insides."""

    def __init__(self, fn, orig):
        super().__init__()
        object.__setattr__(self, "fn", fn)
        object.__setattr__(self, "orig", orig)
        # the leaf's own parameters and buffers, the same objects under the same names, so
        # the model's code still finds them (transformers' self.dtype is the first
        # parameter's; diffusers reads it too) and named_parameters() lines up with eager's
        for name, p in orig.named_parameters(recurse=False):
            self._parameters[name] = p
        for name, b in orig.named_buffers(recurse=False):
            self._buffers[name] = b

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(object.__getattribute__(self, "orig"), name)

    def forward(self, *args, **kwargs):
        # torch.compile runs a frame eagerly while a Python dispatch mode is active (the
        # recorder's _EagerMode is, around the whole run): without stepping outside it, the
        # "compiled" leaf ran eager's own kernels and matched eager bit for bit
        with _outside_dispatch_modes():
            return self.fn(*args, **kwargs)


def _leaves(model):
    return [(p, m) for p, m in model.named_modules() if p and not list(m.children())]


def capture_compiled(module, inputs, path, compile_leaf=None, whole_model=None, compiler=None,
                     run_module=None, contract=None, fastpath=False, steady_calls=0,
                     steady_inputs=None, outcomes=None, reset_dynamo=True, **identity):
    """Runs the compiled module and writes its module outputs under eager's names.

    compile_leaf(leaf, example_args) -> callable compiles each leaf module on its own (a
    model that is itself a leaf, a lone nn.Conv2d, is compiled whole: only /out);
    whole_model(module, example_args) -> callable compiles the module as one (only /out).
    run_module: what is compiled and run, when it is not module itself (a copy with an
    injected bug, in tests); the capture's parameters are module's, the data it was given.
    contract: {module type: attributes} written on the outputs of leaves of that type, the
    compiled kernels' dtype contract: {torch.nn.Linear: {"compute_dtype": "bfloat16"}} for
    bf16 autocast against float32 eager (paritydiff refuses compute_dtype on an op that is
    no dot product, so name only the leaves that run one).
    fastpath: as for capture_eager. Off, the leaves of an encoder layer run (and compile);
    on, torch's fused layer runs instead of them, outside any compiled leaf, and is recorded
    as the layer's output: torch's fast path against eager's op-by-op path.
    steady_calls, steady_inputs, outcomes: as for capture_eager; under torch >= 2 the steady
    state adds dynamo's view of it (_steady_state: fallback_calls, recompiles over warm-up
    and steady state, recompile_reasons, config_hash).
    reset_dynamo: False keeps dynamo's caches from earlier captures, so one compiled object
    that whole_model returns each time (compiled once, fed several shapes) recompiles or
    goes dynamic as it would in serving, and the telemetry shows it.
    """
    import copy
    model = module
    model.eval()
    if compile_leaf is not None and whole_model is None and not _leaves(model):
        # a model that is itself one leaf (a lone nn.Conv2d) has no leaf below it: compiling
        # "each leaf" is compiling it whole. Left alone, nothing was compiled and the
        # "compiled" capture held eager's own kernels, named by the compiler's name.
        whole_model, compile_leaf = compile_leaf, None
    if reset_dynamo:
        try:   # a fresh dynamo, so an earlier capture's compiled code and counters do not leak in
            # (importlib: "import torch._dynamo" here would make torch a local of this function)
            importlib.import_module("torch._dynamo").reset()
        except ImportError:   # torch 1.13
            pass
    with _fast_paths(fastpath):   # compiled, warmed up and run alike
        work = copy.deepcopy(run_module if run_module is not None else model)
        leaf_args = {}
        if compile_leaf is not None:
            handles = []
            def keep(mod, args, out, p):
                leaf_args.setdefault(p, args)   # returns nothing: a hook's value replaces out
            for p, m in _leaves(work):
                handles.append(m.register_forward_hook(
                    lambda mod, args, out, p=p: keep(mod, args, out, p)))
            with torch.no_grad():
                work(*inputs)
            for h in handles:
                h.remove()
            for p, m in _leaves(work):
                if p not in leaf_args:
                    continue
                parent = work.get_submodule(".".join(p.split(".")[:-1])) if "." in p else work
                with torch.no_grad():
                    fn = compile_leaf(m, leaf_args[p])
                setattr(parent, p.split(".")[-1], _Compiled(fn, m))
        rec = _Recorder(model)
        for k, t in enumerate(inputs):
            rec.add_input(k, t)
        rec.add_params()   # as eager names them: the data the compiled side was given
        # the compiled copy's own parameters are the same data under the same names (by
        # name: the compiled leaves hide theirs, so the two lists do not pair up in order)
        mine = dict(itertools.chain(model.named_parameters(), model.named_buffers()))
        for n, p in itertools.chain(work.named_parameters(), work.named_buffers()):
            q = mine.get(n)
            if q is not None and id(q) in rec.by_id:
                rec.by_id[id(p)] = rec.by_id[id(q)]
        whole_fn = whole_model(work, inputs) if whole_model is not None else None
        # dynamo's compile events from here on, each put down to the compiled callable
        # that ran it: the recompiles of steady_calls (_steady_state)
        ledger = _CompileLedger(work, whole_fn) if steady_calls or steady_inputs else None
        run_whole = ledger.wrap(whole_fn) if ledger is not None and whole_fn is not None \
            else whole_fn
        telemetry = _warm_up(run_whole if whole_fn is not None else work, inputs)
        with torch.no_grad():
            if whole_fn is not None:
                out = run_whole(*inputs)
            else:
                def post(m, args, o, mpath, entry):
                    """A compiled leaf's output: recorded under the leaf's name. An input
                    it returns is passed through unless the leaf changed it in place
                    (recording was paused inside: the data tells)."""
                    orig = object.__getattribute__(m, "orig")
                    declared = {}
                    for kind, d in (contract or {}).items():
                        if isinstance(orig, kind):
                            declared = d
                            break
                    for _, t in _output_names(o):   # each tensor of a tuple (LSTM) or dict
                        data, dt = rec.snapshot(t)
                        if any(t is x for x in args if isinstance(x, torch.Tensor)):
                            before = entry.get(id(t))
                            if before is None or (before.data.shape == data.shape and
                                                  before.data.tobytes() == data.tobytes()):
                                continue
                        attrs = {"dtype": dt} if dt else {}
                        attrs.update(declared)
                        rec.add(_Record("/0.compiled", data, attrs=attrs), t)
                    rec.module_output(mpath, args, o, entry)
                handles = rec.hooks(work, post)
                try:
                    with _EagerMode(rec):   # ops outside the compiled leaves run eagerly here too
                        out = work(*inputs)
                finally:
                    for h in handles:
                        h.remove()
        _name_outputs(rec, out, add_missing=True)
        if not _output_names(out):
            raise TypeError("parity_torch: the compiled model returned no tensor (%s)"
                            % type(out).__name__)
    identity["fastpath"] = "on" if fastpath else "off"
    if compiler is None:   # the compiler function's name (torchscript_freeze, ...)
        compiler = getattr(compile_leaf or whole_model, "__name__", None)
        if compiler == "<lambda>":
            compiler = None
    ident = _identity(model, "compiled", compiler, identity)
    ident.update(telemetry)
    with _timing_fast_paths(fastpath):
        ident.update(_steady_state(run_whole if whole_fn is not None else work, inputs,
                                   steady_calls, steady_inputs, dynamo=True,
                                   warm_up=telemetry, ledger=ledger))
        if ledger is not None:
            ledger.close()
    _write(path, rec, "compiled", ident, outcomes)
    return out


def _warm_up(fn, inputs):
    """One run before the recorded one, so lazy compilers (torch.compile) compile outside
    it; under torch >= 2 the telemetry torch._dynamo counted then (FORMAT.md's keys): the
    warm-up's wall time as compile_time_s, graph breaks, recompiles (frames compiled
    beyond one per compiled callable) and eager_frames (frames dynamo gave up on and ran
    eagerly: its counted frames less those it compiled). Empty when dynamo compiled
    nothing."""
    import time
    try:
        from torch._dynamo.utils import counters
    except Exception:   # torch 1.13: no dynamo
        counters = None
    if counters is not None:
        counters.clear()
    t0 = time.perf_counter()
    with torch.no_grad():
        fn(*inputs)
    seconds = time.perf_counter() - t0
    if counters is None or not counters["frames"].get("total"):
        return {}
    frames = counters["frames"]["total"]
    return {"compile_time_s": float(seconds),
            "graph_breaks": int(sum(counters["graph_break"].values())),
            "recompiles": int(max(0, frames - counters["stats"].get("unique_graphs", frames))),
            "eager_frames": int(max(0, frames - counters["frames"].get("ok", frames)))}


# ---- steady-state telemetry (GATE.md, "Telemetry") -------------------------------------

LATENCY_BUCKETS = 256          # latency_hist_ms: GATE.md's fixed buckets
_LATENCY_BASE_MS = 0.001       # bucket 0 is below it; then 8 buckets per power of two


def latency_bucket_edge(i):
    """Upper edge of bucket i in ms (lower edge of bucket i + 1): 0.001 x 2^(i/8)."""
    return _LATENCY_BASE_MS * 2.0 ** (i / 8.0)


def latency_bucket(ms):
    """GATE.md's bucket of a latency in ms: 0 below 0.001 ms, i (1..254) for
    [0.001 x 2^((i-1)/8), 0.001 x 2^(i/8)), 255 the rest (from about 3.6e6 ms). The log2
    guess is checked against the edges themselves, so a latency exactly on an edge goes
    up, as the half-open buckets say, whatever the rounding of the logarithm."""
    import math
    if not ms >= _LATENCY_BASE_MS:    # below the first edge (NaN, negative: 0 too)
        return 0
    if math.isinf(ms):
        return LATENCY_BUCKETS - 1
    i = min(LATENCY_BUCKETS - 1, max(1, int(math.floor(8.0 * math.log2(ms / _LATENCY_BASE_MS))) + 1))
    while i < LATENCY_BUCKETS - 1 and ms >= latency_bucket_edge(i):
        i += 1
    while i > 1 and ms < latency_bucket_edge(i - 1):
        i -= 1
    return i


def latency_histogram(samples_ms):
    """int64[256] counts of samples_ms in GATE.md's buckets."""
    hist = numpy.zeros(LATENCY_BUCKETS, dtype=numpy.int64)
    for ms in samples_ms:
        hist[latency_bucket(ms)] += 1
    return hist


def latency_percentile(samples_ms, q):
    """The exact nearest-rank percentile q (0 < q <= 1) of the samples: the smallest sample
    with at least q x n samples at or below it (a measured latency, never an interpolation
    between two)."""
    import math
    xs = sorted(samples_ms)
    return float(xs[max(0, min(len(xs) - 1, int(math.ceil(q * len(xs))) - 1))])


def _dynamo_utils():
    try:
        return importlib.import_module("torch._dynamo.utils")
    except ImportError:   # torch 1.13: no dynamo
        return None


def _compile_events():
    """dynamo's record of its compiles so far (torch._dynamo.utils.get_compilation_metrics,
    torch >= 2.1: one CompilationMetrics per frame compile, with recompile_reason and
    fail_type), or None where it has none."""
    utils = _dynamo_utils()
    getter = getattr(utils, "get_compilation_metrics", None) if utils is not None else None
    return list(getter()) if getter is not None else None


def _config_hash():
    """A short sha256 over torch._dynamo.config and torch._inductor.config (get_config_copy:
    every key, with its value where it is plain data: bool, number, string, None and lists
    or dicts of them; callables and objects, whose repr holds addresses, by key only), so a
    gate sees a changed compiler configuration. None where the config modules are missing."""
    import hashlib
    import json

    def plain(v):
        if v is None or isinstance(v, (bool, int, float, str)):
            return True
        if isinstance(v, (list, tuple, set, frozenset)):
            return all(plain(x) for x in v)
        if isinstance(v, dict):
            return all(isinstance(k, str) and plain(x) for k, x in v.items())
        return False

    def canon(v):
        if isinstance(v, (set, frozenset)):
            return sorted((canon(x) for x in v), key=repr)
        if isinstance(v, (list, tuple)):
            return [canon(x) for x in v]
        if isinstance(v, dict):
            return {k: canon(x) for k, x in sorted(v.items())}
        return v
    doc = {}
    for name in ("torch._dynamo.config", "torch._inductor.config"):
        try:
            copy = importlib.import_module(name).get_config_copy()
        except (ImportError, AttributeError):
            return None
        doc[name] = {k: canon(v) if plain(v) else "<%s>" % type(v).__name__
                     for k, v in sorted(copy.items())}
    text = json.dumps(doc, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _timing_fast_paths(enabled):
    """The fast-path setting the steady state is timed under: the recorded run's where torch
    has a switch for it (>= 2.1, no cost per call); on torch 1.13 none, since its only way
    off is a pass-through TorchFunctionMode that would put Python into every timed call
    (both sides then time what torch runs, fused fast paths included)."""
    mha = getattr(torch.backends, "mha", None)
    if mha is not None and hasattr(mha, "set_fastpath_enabled"):
        return _fast_paths(enabled)
    return contextlib.nullcontext()


def _sync(out):
    """Waits for an accelerator's queued kernels, so a call's time is its whole run."""
    if isinstance(out, (tuple, list)):
        for o in out:
            _sync(o)
    elif isinstance(out, torch.Tensor) and out.device.type == "cuda":
        torch.cuda.synchronize(out.device)


class _CompileLedger:
    """dynamo's compile events (get_compilation_metrics) during a capture, each put down to
    the compiled callable running when it happened: a compiled leaf (forward hooks on the
    _Compiled modules of work) or the whole-model callable (wrap). A callable's compiles
    are counted on the compiled object itself (_parity_compiles), so its first compile
    ever is known even when it was compiled in an earlier capture (reset_dynamo=False)."""

    def __init__(self, work, whole_fn):
        self.before = _compile_events()
        self.events = []              # (callable or None, event)
        self.stack = []
        self.handles = []
        self.closed = False
        if self.before is None:
            return
        self.seen = {id(e) for e in self.before}
        if whole_fn is None:
            for m in work.modules():
                if isinstance(m, _Compiled):
                    self.handles.append(m.register_forward_pre_hook(
                        lambda mod, args: self.enter(object.__getattribute__(mod, "fn"))))
                    self.handles.append(m.register_forward_hook(
                        lambda mod, args, out: self.leave()))

    def _new(self):
        evs = [e for e in (_compile_events() or ()) if id(e) not in self.seen]
        self.seen.update(id(e) for e in evs)
        return evs

    def enter(self, owner):
        if self.before is not None:
            self.events.extend((self.stack[-1] if self.stack else None, e) for e in self._new())
            self.stack.append(owner)

    def leave(self):
        if self.before is not None and self.stack:
            owner = self.stack.pop()
            self.events.extend((owner, e) for e in self._new())

    def wrap(self, fn):
        def run(*args):
            self.enter(fn)
            try:
                return fn(*args)
            finally:
                self.leave()
        run.__wrapped__ = fn
        return run

    def recompile_reasons(self):
        """The recompile_reason of every recompile: a compile event with one, less each
        callable's first compile ever."""
        self.events.extend((None, e) for e in self._new())
        reasons = []
        for owner, e in self.events:
            ok = not e.fail_type
            first = ok and owner is not None and not getattr(owner, "_parity_compiles", 0)
            if ok and owner is not None:
                try:
                    owner._parity_compiles = getattr(owner, "_parity_compiles", 0) + 1
                except (AttributeError, TypeError):
                    pass   # an object that takes no attributes: every compile counts
            if e.recompile_reason and not first:
                reasons.append(e.recompile_reason)
        self.events = []
        return reasons

    def close(self):
        for h in self.handles:
            h.remove()
        self.handles = []


def _uses_dynamo(fn):
    """Is fn (or a compiled leaf in it) a torch.compile'd callable? Its warm-up may have
    compiled nothing (a compiled object reused from an earlier capture, reset_dynamo=False)."""
    def compiled(f):
        return getattr(f, "_torchdynamo_orig_callable", None) is not None or \
            type(f).__name__ == "OptimizedModule"
    fn = getattr(fn, "__wrapped__", fn)
    if compiled(fn):
        return True
    if isinstance(fn, torch.nn.Module):
        for m in fn.modules():
            if compiled(m) or (isinstance(m, _Compiled) and
                               compiled(object.__getattribute__(m, "fn"))):
                return True
    return False


def _steady_state(fn, inputs, steady_calls, steady_inputs, dynamo, warm_up=None, ledger=None):
    """Times steady_calls calls of fn (after the warm-up and the recorded run, under no_grad,
    outside any Python dispatch mode, so a compiled model runs its own kernels), cycling
    through steady_inputs (a list of argument tuples; default: the capture's inputs). The
    root attributes it gives (none when steady_calls is 0 and steady_inputs not given;
    steady_inputs alone times each once): calls, steady_time_s (sum), latency_hist_ms
    (GATE.md's 256 buckets), latency_p50_ms and latency_p99_ms (nearest-rank, exact).

    dynamo (the compiled side, torch >= 2, when dynamo compiled something during the warm-up
    or the steady state) adds, from torch._dynamo.utils:
    - fallback_calls: steady calls during which counters["frames"]["total"] grew more than
      counters["frames"]["ok"] (ConvertFrame counts each frame it is handed in "total" and
      those it converted in "ok": a frame it gave up on, an Unsupported skip or its recompile
      limit, which it signals by raising Unsupported "Dynamo recompile limit exceeded", ran
      eagerly), or a compile event of the call (get_compilation_metrics) failed (fail_type).
      A frame dynamo has marked skip or run-only runs eagerly in later calls without passing
      through ConvertFrame, so no counter sees those calls: only the call that hit the limit
      counts (the warm-up's are in eager_frames).
    - recompiles: the compile events since this capture began (warm-up, recorded run and
      steady state) that were recompilations (recompile_reason set: dynamo had cache
      entries for the frame and their guards all failed), less each compiled callable's
      first compile ever (_CompileLedger: torch.compile'd leaves share one frame of dynamo's,
      so a second leaf's first compile is a "recompilation" of it), so new shapes among
      steady_inputs show; where get_compilation_metrics is missing (torch 2.0), the
      warm-up's count plus the steady state's growth of counters["frames"]["ok"].
    - recompile_reasons: those events' recompile_reason (the first failing guard, "size
      mismatch at index 0. expected 16, actual 64"), one a line; torch 2.0: the entries
      of torch._dynamo.utils.guard_failures.
    - config_hash (_config_hash).
    The compiled artifacts (Inductor's FX graph cache keys) are not exposed by dynamo's
    counters or compile events on CPU, so no cache_hash is written."""
    import time
    if steady_inputs is not None:
        steady_inputs = [tuple(a) for a in steady_inputs]
        if not steady_calls:
            steady_calls = len(steady_inputs)
    if not steady_calls:
        return {}
    if steady_calls < 0:
        raise ValueError("parity_torch: steady_calls must be >= 0")
    pool = steady_inputs or [tuple(inputs)]
    utils = _dynamo_utils() if dynamo else None
    counters = utils.counters if utils is not None else None
    events_known = ledger is not None and ledger.before is not None
    frames_before = dict(counters["frames"]) if counters is not None else {}
    samples, fallback = [], 0
    with torch.no_grad(), _outside_dispatch_modes():
        for k in range(steady_calls):
            args = pool[k % len(pool)]
            if counters is not None:
                total0, ok0 = counters["frames"]["total"], counters["frames"]["ok"]
                ev0 = _compile_events() if events_known else None
            t0 = time.perf_counter()
            _sync(fn(*args))
            samples.append((time.perf_counter() - t0) * 1e3)
            if counters is not None:
                gave_up = (counters["frames"]["total"] - total0) > (counters["frames"]["ok"] - ok0)
                if ev0 is not None:
                    seen = {id(e) for e in ev0}
                    gave_up = gave_up or any(e.fail_type for e in _compile_events()
                                             if id(e) not in seen)
                fallback += bool(gave_up)
    out = {"calls": int(steady_calls),
           "steady_time_s": float(sum(samples) / 1e3),
           "latency_hist_ms": latency_histogram(samples),
           "latency_p50_ms": latency_percentile(samples, 0.50),
           "latency_p99_ms": latency_percentile(samples, 0.99)}
    if counters is None or not (warm_up or counters["frames"].get("total") or _uses_dynamo(fn)):
        return out   # eager, torch 1.13, or a compiler dynamo had no part in
    out["fallback_calls"] = int(fallback)
    if events_known:
        reasons = ledger.recompile_reasons()
        out["recompiles"] = len(reasons)
    else:
        reasons = [r for rs in utils.guard_failures.values() for r in rs]
        grown = counters["frames"].get("ok", 0) - frames_before.get("ok", 0)
        out["recompiles"] = int((warm_up or {}).get("recompiles", 0) + max(0, grown))
    out["recompile_reasons"] = "\n".join(str(r).strip().splitlines()[0] for r in reasons
                                         if str(r).strip())
    h = _config_hash()
    if h is not None:
        out["config_hash"] = h
    return out


# ---- compilers for capture_compiled ----------------------------------------------------

def torchscript_freeze(module, args):
    """TorchScript trace, freeze and optimize_for_inference: what torch 1.13 deploys."""
    traced = torch.jit.trace(module.eval(), args, check_trace=False)
    return torch.jit.optimize_for_inference(torch.jit.freeze(traced))


def torchscript_trace(module, args):
    return torch.jit.trace(module.eval(), args, check_trace=False)


def mkldnn(module, args):
    """oneDNN (mkldnn) layouts for the leaves it converts (Conv2d, Linear), the rest as is."""
    import copy
    import torch.utils.mkldnn
    if not isinstance(module, (torch.nn.Conv2d, torch.nn.Linear)):
        return module
    m = torch.utils.mkldnn.to_mkldnn(copy.deepcopy(module))
    return lambda x: m(x.to_mkldnn()).to_dense()


def channels_last(module, args):
    """The leaf with its weights and 4-D inputs in channels_last memory format."""
    import copy
    m = copy.deepcopy(module).to(memory_format=torch.channels_last)
    # a leaf given no 4-D input runs as it is: dropout in eval passes its input through,
    # and a .contiguous() copy of a strided input would be an output eager does not have
    return lambda x: m(x.contiguous(memory_format=torch.channels_last)).contiguous() \
        if x.dim() == 4 else m(x)


def torch_compile(module, args):
    """torch.compile (Inductor), torch >= 2. Every compiled module runs through one wrapper
    function of dynamo's, whose recompile limit (8) a model's leaves exceed: past it dynamo
    silently runs the leaf eagerly, so the limit is raised here."""
    config = importlib.import_module("torch._dynamo").config
    for name in ("recompile_limit", "cache_size_limit"):
        if getattr(config, name, 1 << 20) < 1024:
            setattr(config, name, 1024)
    return torch.compile(module)


def whole(compile_fn):
    """compile_fn over the whole model, for capture_compiled(whole_model=...)."""
    def whole_model(model, args):
        return compile_fn(model, args)
    whole_model.__name__ = "whole " + getattr(compile_fn, "__name__", "model")
    return whole_model
