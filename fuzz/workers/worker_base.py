"""worker_base.py - what every parityfuzz worker in this folder shares: the protocol (version
2, formats/FORMAT.md "Fuzz worker protocol"), the case file read as numpy arrays, and the
output file written atomically. A worker supplies its op map and a run function; see
ort_worker.py.

Import it first: it moves everything but the protocol off the real stdout (a library banner
or a stray print in C++ code must not break the protocol), so imports after it may print.
"""
import os
import sys
import tempfile
import traceback

PROTOCOL_VERSION = 2

_PROTO = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8", newline="\n")
os.dup2(2, 1)
sys.stdout = sys.stderr

import faulthandler  # noqa: E402

faulthandler.enable()   # a crash in a library prints the Python stack; the signal still ends it

import h5py  # noqa: E402
import numpy as np  # noqa: E402


class CaseSkip(Exception):
    """The case cannot be run here (a dtype or a parameter the framework lacks)."""


def say(line):
    _PROTO.write(line + "\n")
    _PROTO.flush()


def log(name, msg):
    sys.stderr.write("%s: %s\n" % (name, msg))
    sys.stderr.flush()


def as_str(v):
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if isinstance(v, np.ndarray) and v.shape == ():
        return as_str(v.item())
    return str(v)


def as_py(v):
    """An HDF5 attribute value as plain Python: str, int, float, or a list of those."""
    if isinstance(v, h5py.Empty):
        return []
    if isinstance(v, (bytes, str)):
        return as_str(v)
    if isinstance(v, np.ndarray):
        if v.shape == ():
            return as_py(v.item())
        return [as_py(x) for x in v.reshape(-1)]
    if isinstance(v, np.generic):
        return v.item()
    return v


def as_list(v):
    v = as_py(v)
    return v if isinstance(v, list) else [v]


NUMPY_DTYPES = {"float64": np.float64, "float32": np.float32, "float16": np.float16,
                "int64": np.int64, "int32": np.int32, "bool": np.bool_}
try:   # bfloat16 has a numpy type where ml_dtypes is installed (JAX brings it)
    import ml_dtypes  # noqa: E402
    NUMPY_DTYPES["bfloat16"] = ml_dtypes.bfloat16
except ImportError:
    pass
BIT_STORED = {"bfloat16": np.uint16}   # stored as bit patterns with a "dtype" mark (FORMAT.md)


class Case:
    """A case file (FORMAT.md, "Fuzz cases") with its inputs as numpy arrays. bfloat16 (stored
    as bit patterns) is read where ml_dtypes gives it a type; float8 and the rest of what
    numpy has no type for are refused with CaseSkip."""

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
            self.params, self.raw_params = {}, {}
            for key in a.keys():
                if key.startswith("param."):
                    self.raw_params[key[6:]] = a[key]
                    self.params[key[6:]] = as_py(a[key])
            if self.out_dtype not in NUMPY_DTYPES:
                raise CaseSkip("dtype %s has no numpy type" % self.out_dtype)
            self.inputs = read_inputs(f, self.input_names)


def read_inputs(f, names):
    """The datasets named as numpy arrays (bfloat16 where ml_dtypes gives it a type)."""
    inputs = []
    for name in names:
        ds = f[name]
        mark = ds.attrs.get("dtype")
        if mark is not None:
            mark = as_str(mark)
            if mark not in BIT_STORED or mark not in NUMPY_DTYPES:
                raise CaseSkip("dtype %s has no numpy type" % mark)
            bits = np.array(ds[()], dtype=BIT_STORED[mark], order="C")
            inputs.append(bits.view(NUMPY_DTYPES[mark]))
            continue
        arr = np.asarray(ds[()])
        if h5py.check_enum_dtype(ds.dtype) is not None:
            arr = arr.astype(np.bool_)
        inputs.append(np.array(arr, dtype=arr.dtype.newbyteorder("="), order="C"))
    return inputs


def case_version(path):
    """The case file's version: 1 (one op, "parity_case_version") or 2 (a graph case,
    "case_version"; FORMAT.md, "Graph cases")."""
    with h5py.File(path, "r") as f:
        if "parity_case_version" in f.attrs:
            return int(as_py(f.attrs["parity_case_version"]))
        return int(as_py(f.attrs.get("case_version", 0)))


class GraphSpec:
    """A graph case file's graph, without its tensors: family, input names, nodes as
    (name, op, input names, params, raw params) in order, and the output's dtype and shape.
    The last node is /out; its op, params and order are what the worker's /out carries."""

    def __init__(self, f):
        a = f.attrs
        self.family = as_str(a["graph_family"])
        self.case_dtype = as_str(a["case_dtype"])
        self.input_names = [str(x) for x in as_list(a["inputs"])]
        self.out_dtype = str(as_list(a["output_dtypes"])[0])
        self.out_shape = [int(x) for x in as_list(a.get("output_shape", []))]
        self.nodes = []
        names = [str(x) for x in as_list(a["graph_nodes"])]
        for k, name in enumerate(names):
            prefix = "node.%d." % k
            params, raw = {}, {}
            for key in a.keys():
                if key.startswith(prefix) and key[len(prefix):] not in ("op", "inputs"):
                    raw[key[len(prefix):]] = a[key]
                    params[key[len(prefix):]] = as_py(a[key])
            self.nodes.append((name, as_str(a[prefix + "op"]),
                               [str(x) for x in as_list(a[prefix + "inputs"])], params, raw))
        # what write_stored writes on /out: the last node's op and attributes; no inputs
        # (a fused side keeps no record of what it fused), its order
        self.op, self.raw_params = self.nodes[-1][1], self.nodes[-1][4]
        self.out_inputs, self.out_order = None, len(self.nodes) - 1


def graph_case_for(who, path, side, ops, reader=None):
    """A graph case's file read for a worker that maps `ops`: its compiled side only (the
    eager side of a graph case is parityfuzz's builtin kernels), every node's op mapped (else
    CaseSkip). reader: the worker's own case reader (default GraphCase: numpy inputs)."""
    if side != "compiled":
        raise ValueError("graph cases run their compiled side only (got %s)" % side)
    case = (reader or GraphCase)(path)
    for _, op, _, _, _ in case.nodes:
        if op not in ops:
            raise CaseSkip("%s has no mapping for %s" % (who, op))
    return case


class GraphCase(GraphSpec):
    """A graph case file with its inputs as numpy arrays (read_inputs)."""

    def __init__(self, path):
        with h5py.File(path, "r") as f:
            super().__init__(f)
            if self.out_dtype not in NUMPY_DTYPES:
                raise CaseSkip("dtype %s has no numpy type" % self.out_dtype)
            self.inputs = read_inputs(f, self.input_names)


def write_stored(path, case, data, mark=None):
    """Writes /out atomically (a temporary file in the same folder, then a rename) from its
    storage form: data as stored, mark the FORMAT.md "dtype" of bit-pattern storage (or
    None), with the attributes FORMAT.md asks of a worker's output. Every worker's writer."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        with h5py.File(tmp, "w") as f:
            d = f.create_dataset("out", data=data)
            if mark is not None:
                d.attrs["dtype"] = mark
            d.attrs["op"] = case.op
            inputs = getattr(case, "out_inputs", case.input_names)
            if inputs is not None:
                d.attrs["inputs"] = inputs
            d.attrs["order"] = getattr(case, "out_order", 1)
            for name, value in case.raw_params.items():
                d.attrs[name] = value
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_output(path, case, arr):
    """Writes a numpy result as /out, after checking its dtype and shape against the case."""
    want = NUMPY_DTYPES[case.out_dtype]
    arr = np.asarray(arr)
    if arr.dtype != want or list(arr.shape) != case.out_shape:
        raise ValueError("the op returned %s %s, the case expects %s %s" %
                         (arr.dtype, list(arr.shape), case.out_dtype, case.out_shape))
    if case.out_dtype in BIT_STORED:
        write_stored(path, case, arr.view(BIT_STORED[case.out_dtype]), case.out_dtype)
    else:
        write_stored(path, case, arr)


def unavailable(who, error):
    """Ends a worker whose framework did not import: says so on stderr and exits 2 before
    the handshake, so parityfuzz stops ("worker exited before READY"): never a silent
    skip."""
    log(who, "unavailable: %s (install it: bash scripts/setup-venv.sh "
        "scripts/requirements-compilers.txt, and run this worker with that python)" % error)
    raise SystemExit(2)


def one_line(e):
    msg = "%s: %s" % (type(e).__name__, e) if not isinstance(e, CaseSkip) else str(e)
    msg = " ".join(msg.split())
    return msg[:1000] if msg else type(e).__name__


def capabilities(line):
    """The key=value fields of a protocol line (unknown keys stay unused)."""
    return dict(w.split("=", 1) for w in line.split()[1:] if "=" in w)


def serve(who, name, ops, dtypes, run, skip=None, eager_builtin=False, graphs=False):
    """The protocol: HELLO 2, READY 2 <name> with the answer to the offer from `ops` (op ->
    anything; the ops this worker maps) and `dtypes` (those it runs), then RUN requests
    answered by run(side, case_path, out_path) until QUIT or EOF. run may return the seconds
    of the request spent compiling (sent as OK compile_s=S), or None. who: the worker's file
    name, for its logs and skip reasons; skip: op -> reason, for mapped ops this
    installation cannot run; eager_builtin: the worker runs compiled sides only, parityfuzz
    runs the eager side with its builtin kernels (READY's eager=builtin); graphs: the worker
    runs graph cases (RUN compiled with a case of version 2), so it answers every offered
    graph family (a case with an op it does not map is a SKIP). Returns the exit status."""
    skip = skip or {}
    name = name.replace(" ", "-")
    stdin = sys.stdin.buffer
    say("HELLO %d" % PROTOCOL_VERSION)
    line = stdin.readline().decode("utf-8", "replace")
    if not line.startswith("OFFER "):
        log(who, "expected OFFER, got %r" % line.rstrip("\n"))
        return 2
    offer = capabilities(line)
    runs = []
    for op in filter(None, offer.get("ops", "").split(",")):
        if op in skip:
            say("SKIP %s %s" % (op, skip[op]))
        elif op not in ops:
            say("SKIP %s %s has no mapping for it" % (op, who))
        else:
            runs.append(op)
    answer = [d for d in filter(None, offer.get("dtypes", "").split(",")) if d in dtypes]
    families = [g for g in filter(None, offer.get("graphs", "").split(","))] if graphs else []
    say("READY %d %s ops=%s dtypes=%s%s%s" % (PROTOCOL_VERSION, name, ",".join(runs),
                                             ",".join(answer),
                                             " eager=builtin" if eager_builtin else "",
                                             " graphs=" + ",".join(families) if families else ""))
    while True:
        raw = stdin.readline()
        if not raw:
            return 0
        words = raw.decode("utf-8", "replace").split()
        if not words:
            continue
        if words[0] == "QUIT":
            return 0
        if words[0] != "RUN" or len(words) != 4:
            say("ERROR malformed request (expected RUN <side> <case.h5> <out.h5>)")
            continue
        try:
            compile_s = run(words[1], words[2], words[3])
            say("OK" if compile_s is None else "OK compile_s=%.6f" % max(0.0, compile_s))
        except CaseSkip as e:
            say("SKIP " + one_line(e))
        except Exception as e:  # the side raised: a one-line ERROR, the details on stderr
            log(who, "%s %s: %s" % (words[1], words[2], traceback.format_exc().rstrip()))
            say("ERROR " + one_line(e))


def run_main(main):
    """Exits with main()'s status; a closed pipe or Ctrl-C (parityfuzz went away) is exit 0."""
    try:
        raise SystemExit(main())
    except (BrokenPipeError, KeyboardInterrupt):
        raise SystemExit(0)
