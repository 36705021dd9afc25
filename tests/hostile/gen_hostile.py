#!/usr/bin/python3
"""gen_hostile.py - writes the hostile-capture battery: one good pair and many hostile or
extreme captures, each with a manifest line saying what paritydiff must do with it.

    /usr/bin/python3 tests/hostile/gen_hostile.py OUTDIR

OUTDIR gets good_eager.h5 and good_compiled.h5 (a small realistic pair, formats/FORMAT.md:
linear -> relu -> softmax -> slice, and conv2d -> max_pool2d, with graph inputs and
parameters), one file per case, and manifest.jsonl, one JSON object per line:

    name      the case, also its file name (NAME.h5) unless "file" gives another
    hostile   what is hostile about it, in words
    expect    {"eager": [...], "compiled": [...], "self": [...]}: the exit codes allowed when
              the case is the eager side (against good_compiled.h5), the compiled side
              (against good_eager.h5) and both sides (against itself)
    args      optional extra paritydiff arguments for all three runs
    max_seconds  optional per-run wall limit of this case, below the runner's (what a
              file merely declares must cost no time; a known slow path is measured)
    max_rss_mib  likewise for peak resident memory
    warn      optional substring some "paritydiff: warning:" line of the self run must hold
    error     optional substring the one stderr line of every run that exits 2 must hold
    known     optional: a defect being fixed elsewhere ("issue 14 item 5"); the runner
              reports a failure of this case as known instead of failing
    self_fails  optional, why this capture fails even against itself; without it the
              runner calls a self run's exit 1 a false alarm, whatever "expect" says

tests/hostile/run_hostile.py runs the battery (it calls this script itself). Most cases are
the good eager capture with one thing changed, so that as either side the rest of the pair
still matches and what paritydiff says is about that one thing. Everything stays small on
disk (the largest file is a few MB; declared sizes may be huge, storage is never written).
Names of cases are stable: a finding is reproduced from its name.
"""
import json
import os
import shutil
import sys
import zlib

import numpy as np

try:
    import h5py
except ImportError:  # the setup script installs python3-h5py; say so instead of a trace
    sys.exit("gen_hostile.py: h5py is missing for %s (bash scripts/setup-deps.sh installs "
             "python3-h5py)" % sys.executable)

RNG = np.random.default_rng(14)

# ---- the good pair -----------------------------------------------------------------------

X = RNG.standard_normal((4, 8)).astype(np.float32)
W = (RNG.standard_normal((16, 8)) * 0.3).astype(np.float32)
B = (RNG.standard_normal(16) * 0.1).astype(np.float32)
IMG = RNG.standard_normal((1, 2, 6, 6)).astype(np.float32)
CW = (RNG.standard_normal((3, 2, 3, 3)) * 0.3).astype(np.float32)
CB = (RNG.standard_normal(3) * 0.1).astype(np.float32)


def linear(x, w, b, acc):
    """y = x w^T + b, summed in acc (float64 for eager, float32 in blocks of 4 for the
    compiled side: the rounding difference a compiler's reordering leaves)."""
    if acc == np.float64:
        return (x.astype(np.float64) @ w.astype(np.float64).T + b).astype(np.float32)
    y = np.zeros((x.shape[0], w.shape[0]), np.float32)
    for k0 in range(0, x.shape[1], 4):
        y += x[:, k0:k0 + 4] @ w[:, k0:k0 + 4].T
    return (y + b).astype(np.float32)


def conv2d(x, w, b, acc):
    """stride 1, padding 1, dilation 1, groups 1 (what /conv/out's attributes say)."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.zeros((n, c, h + 2, wd + 2), acc)
    xp[:, :, 1:-1, 1:-1] = x
    y = np.zeros((n, o, h, wd), acc)
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,oc->nohw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j].astype(acc))
    return (y + b.reshape(1, -1, 1, 1)).astype(np.float32)


def softmax(x):
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def max_pool(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def tensors(side):
    """The good capture's tensors: name -> (data, op, inputs, order, op attributes)."""
    acc = np.float64 if side == "eager" else np.float32
    fc = linear(X, W, B, acc)
    act = np.maximum(fc, 0)
    out = softmax(act)
    conv = conv2d(IMG, CW, CB, acc)
    return {
        "/input/0": (X, None, None, None, {}),
        "/fc/weight": (W, None, None, None, {}),
        "/fc/bias": (B, None, None, None, {}),
        "/fc/out": (fc, "linear", ["/input/0", "/fc/weight", "/fc/bias"], 0, {}),
        "/act/out": (act, "relu", ["/fc/out"], 1, {}),
        "/out": (out, "softmax", ["/act/out"], 2, {"dim": 1}),
        "/slice/out": (out[:, 2:10:2].copy(), "slice", ["/out"], 3,
                       {"dim": 1, "start": 2, "end": 10, "step": 2}),
        "/input/1": (IMG, None, None, None, {}),
        "/conv/weight": (CW, None, None, None, {}),
        "/conv/bias": (CB, None, None, None, {}),
        "/conv/out": (conv, "conv2d", ["/input/1", "/conv/weight", "/conv/bias"], 4,
                      {"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "groups": 1}),
        "/pool/out": (max_pool(conv), "max_pool2d", ["/conv/out"], 5,
                      {"kernel_size": [2, 2], "stride": [2, 2]}),
    }


def write_base(f, side="eager", skip=(), root=True):
    """Writes the good capture into the open file f, less the tensors named in skip."""
    if root:
        f.attrs["parity_format"] = 1
        f.attrs["side"] = side
        f.attrs["model"] = "hostile-base"
        f.attrs["framework"] = "pytorch"
        f.attrs["framework_version"] = "2.1.0"
    for name, (data, op, inputs, order, attrs) in tensors(side).items():
        if name in skip:
            continue
        d = f.create_dataset(name, data=data)
        if op is not None:
            d.attrs["op"] = op
            d.attrs["inputs"] = inputs
            d.attrs["order"] = order
        for k, v in attrs.items():
            d.attrs[k] = v


# ---- the cases ---------------------------------------------------------------------------

CASES = []
BAD = {"eager": [2], "compiled": [2], "self": [2]}    # bad input: trouble every way
FINE = {"eager": [0], "compiled": [0], "self": [0]}   # legal, and nothing differs that fails


def expect(e, c, s):
    return {"eager": sorted(e), "compiled": sorted(c), "self": sorted(s)}


def case(name, hostile, exp, **extra):
    """Registers a writer fn(path, folder) for NAME.h5 with its manifest line."""
    def register(fn):
        CASES.append((name, fn, dict(name=name, hostile=hostile, expect=exp, **extra)))
        return fn
    return register


def base_file(path, libver=None, skip=(), **kw):
    """The good eager capture, opened for the case to change (h5py.File, mode w)."""
    f = h5py.File(path, "w", libver=libver) if libver else h5py.File(path, "w")
    write_base(f, skip=skip, **kw)
    return f


def with_attr(tensor, key, value, libver=None):
    """A case writer: the good eager capture with one attribute of one tensor replaced."""
    def write(path, folder):
        with base_file(path, libver=libver) as f:
            d = f[tensor]
            if key in d.attrs:
                del d.attrs[key]
            if callable(value):
                value(d)
            else:
                d.attrs[key] = value
    return write


def with_extra(make):
    """A case writer: the good eager capture plus what make(f) adds."""
    def write(path, folder):
        with base_file(path) as f:
            make(f)
    return write


def add_case(name, hostile, exp, writer, **extra):
    CASES.append((name, writer, dict(name=name, hostile=hostile, expect=exp, **extra)))


# -- files that are not captures

@case("not_hdf5_bytes", "4 KiB of random bytes", BAD)
def _(path, folder):
    with open(path, "wb") as out:
        out.write(RNG.integers(0, 256, 4096, dtype=np.uint8).tobytes())


@case("empty_file", "a file of 0 bytes", BAD)
def _(path, folder):
    open(path, "wb").close()


@case("hdf5_signature_then_garbage", "the HDF5 signature, then random bytes", BAD)
def _(path, folder):
    with open(path, "wb") as out:
        out.write(b"\x89HDF\r\n\x1a\n" + RNG.integers(0, 256, 2048, dtype=np.uint8).tobytes())


def truncated(fraction):
    def write(path, folder):
        with base_file(path):
            pass
        size = os.path.getsize(path)
        with open(path, "r+b") as out:
            out.truncate(int(size * fraction))
    return write


add_case("truncated_superblock", "the good capture cut to its first 64 bytes", BAD,
         truncated(64 / 1e9))
add_case("truncated_half", "the good capture cut in half", BAD, truncated(0.5))
add_case("truncated_tail", "the good capture less its last 16 bytes", BAD, truncated(0.999))

# -- attributes of the wrong type (FORMAT.md: op, inputs, order, dtype, run_failure)

add_case("op_is_int", "op = 3 on /fc/out", BAD, with_attr("/fc/out", "op", 3), error="'op'")
add_case("op_is_string_array", "op = ['linear', 'relu']", BAD,
         with_attr("/fc/out", "op", ["linear", "relu"]), error="'op'")
add_case("op_is_null_dataspace", "op is an attribute with a null dataspace", BAD,
         with_attr("/fc/out", "op", lambda d: d.attrs.create("op", h5py.Empty("S6"))),
         error="'op'")
add_case("inputs_is_int_array", "inputs = [1, 2, 3]", BAD,
         with_attr("/fc/out", "inputs", np.array([1, 2, 3], np.int64)), error="'inputs'")
add_case("order_is_string", "order = 'first'", BAD, with_attr("/fc/out", "order", "first"),
         error="'order'")
add_case("order_is_float", "order = 0.5", BAD, with_attr("/fc/out", "order", 0.5),
         error="'order'")
add_case("order_is_array", "order = [0, 1]", BAD,
         with_attr("/fc/out", "order", np.array([0, 1], np.int64)), error="'order'")
add_case("dtype_attr_unknown", "dtype = 'float128' on a float32 tensor", BAD,
         with_attr("/fc/out", "dtype", "float128"), error="dtype")
add_case("dtype_attr_contradicts", "dtype = 'bfloat16' on a float32 tensor", BAD,
         with_attr("/fc/out", "dtype", "bfloat16"), error="dtype")
add_case("dtype_attr_is_int", "dtype = 16", BAD, with_attr("/fc/out", "dtype", 16),
         error="dtype")
add_case("dtype_attr_empty", "dtype = ''", BAD, with_attr("/fc/out", "dtype", ""),
         error="dtype")
# The compiled tensor's acc_dtype and compute_dtype are its declared contract and are read;
# as the compiled side, the one line names the good eager file instead (found by this
# battery; marked until fixed, so the battery stays a gate for everything else).
add_case("acc_dtype_unknown", "acc_dtype = 'float7' on /fc/out", BAD,
         with_attr("/fc/out", "acc_dtype", "float7"), error="acc_dtype")
add_case("acc_dtype_is_int", "acc_dtype = 3 on /fc/out", BAD,
         with_attr("/fc/out", "acc_dtype", 3), error="acc_dtype")
add_case("compute_dtype_unknown", "compute_dtype = 'int4' on /fc/out", BAD,
         with_attr("/fc/out", "compute_dtype", "int4"), error="compute_dtype")
add_case("order_is_null_dataspace", "order is an attribute with a null dataspace", BAD,
         with_attr("/act/out", "order", lambda d: d.attrs.create("order", h5py.Empty("i8"))),
         error="'order'")
add_case("run_failure_is_int", "root run_failure = 1", BAD,
         with_attr("/", "run_failure", 1), error="run_failure")
add_case("run_failure_is_string_array", "root run_failure = ['crash', 'hang']", BAD,
         with_attr("/", "run_failure", ["crash", "hang"]), error="run_failure")


@case("dtype_bfloat16_on_int32", "dtype = 'bfloat16' on int32 bit patterns (must be 16-bit)",
      BAD, error="dtype")
def _(path, folder):
    with base_file(path) as f:
        d = f.create_dataset("/extra/bits", data=np.arange(8, dtype=np.int32))
        d.attrs["dtype"] = "bfloat16"


# -- shapes

@case("absurd_shape_2_60", "a chunked, never written tensor of 2^60 elements", BAD,
      error="absurd")
def _(path, folder):
    with base_file(path) as f:
        f.create_dataset("/extra/absurd", shape=(2**40, 2**20), dtype="f4", chunks=(1, 1024))


@case("absurd_shape_2_48_plus_1", "2^48 + 1 elements (one over the limit), never written",
      BAD, error="absurd")
def _(path, folder):
    with base_file(path) as f:
        f.create_dataset("/extra/absurd", shape=(2**48 + 1,), dtype="u1", chunks=(2**20,))


@case("enormous_legal_unwritten_timeout", "2^47 float32 elements never written, run with "
      "--timeout 3: what the file declares must not hold the diff",
      expect([0], [0], [0, 2]), args=["--timeout", "3", "--stall-timeout", "5"])
def _(path, folder):
    with base_file(path) as f:
        f.create_dataset("/extra/enormous", shape=(2**24, 2**23), dtype="f4", chunks=(1, 4096))


@case("unallocated_chunked_2_40", "a chunked tensor of 2^40 float32 elements with no chunk "
      "allocated (a few KB on disk), default options", FINE, max_seconds=5)
def _(path, folder):
    with base_file(path) as f:
        f.create_dataset("/extra/sparse", shape=(2**20, 2**20), dtype="f4", chunks=(1, 65536))


@case("unallocated_contiguous_2_34", "a contiguous tensor of 2^34 uint8 elements never "
      "written (late allocation: no storage at all)", FINE,
      max_seconds=5)
def _(path, folder):
    with base_file(path) as f:
        s = h5py.h5s.create_simple((2**34,))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_LATE)
        h5py.h5d.create(f.id, b"/extra_contig", h5py.h5t.STD_U8LE, s, dcpl=dcpl)


@case("zero_size_tensors", "tensors of shape [0], [4, 0] and [0, 2^40]", FINE,
      warn="zero-size tensor")
def _(path, folder):
    with base_file(path) as f:
        f.create_dataset("/extra/z0", shape=(0,), dtype="f4")
        f.create_dataset("/extra/z1", shape=(4, 0), dtype="f4")
        f.create_dataset("/extra/z2", shape=(0, 2**40), dtype="f4")


@case("scalar_tensors", "rank-0 tensors, float32, bool and int64", FINE)
def _(path, folder):
    with base_file(path) as f:
        f.create_dataset("/extra/s_f32", data=np.float32(1.5))
        f.create_dataset("/extra/s_bool", data=np.bool_(True))
        f.create_dataset("/extra/s_i64", data=np.int64(-2**63))


@case("rank_32", "a tensor of rank 32 (HDF5's largest), all dims 1 but one of 2", FINE)
def _(path, folder):
    with base_file(path) as f:
        f.create_dataset("/extra/r32", data=np.ones((2,) + (1,) * 31, np.float32))


@case("output_reshaped", "/out's data reshaped to [64] (same bytes, other shape): against the "
      "other side a shape mismatch, on its own a softmax whose output cannot be its input's",
      expect([1], [1], [2]), error="differs from output shape")
def _(path, folder):
    with base_file(path, skip=("/out",)) as f:
        d = f.create_dataset("/out", data=tensors("eager")["/out"][0].reshape(-1))
        d.attrs.update({"op": "softmax", "inputs": ["/act/out"], "order": 2, "dim": 0})


@case("null_dataspace", "a tensor with a null dataspace (h5py.Empty)", BAD)
def _(path, folder):
    with base_file(path) as f:
        f.create_dataset("/extra/null", data=h5py.Empty("f4"))


# -- element types paritydiff cannot compare

def extra_dataset(name, **kw):
    return with_extra(lambda f: f.create_dataset(name, **kw))


add_case("type_compound", "a compound element type", BAD,
         extra_dataset("/extra/t", data=np.zeros(4, dtype=[("a", "i4"), ("b", "f4")])),
         error="/extra/t")
add_case("type_complex64", "complex64 (h5py writes a compound r, i)", BAD,
         extra_dataset("/extra/t", data=np.ones(4, np.complex64)), error="/extra/t")
add_case("type_vlen_float", "variable-length sequences of float32", BAD,
         extra_dataset("/extra/t", shape=(2,), dtype=h5py.vlen_dtype(np.float32)),
         error="/extra/t")
add_case("type_vlen_string", "variable-length strings", BAD,
         extra_dataset("/extra/t", data=np.array(["ab", "cd"], dtype=h5py.string_dtype())),
         error="/extra/t")
add_case("type_fixed_string", "fixed-length strings", BAD,
         extra_dataset("/extra/t", data=np.array([b"ab", b"cd"])), error="/extra/t")
add_case("type_opaque", "an opaque element type (numpy void)", BAD,
         extra_dataset("/extra/t", data=np.zeros(4, dtype="V4")), error="/extra/t")
add_case("type_enum_colors", "an enum over int8 that is not bool (RED, GREEN, BLUE)", BAD,
         extra_dataset("/extra/t", data=np.array([0, 1, 2], np.int8),
                       dtype=h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 2}, basetype="i1")),
         error="/extra/t")
add_case("type_enum_bool_int32", "an enum FALSE/TRUE over int32 (bool is over int8)",
         expect([0, 2], [0, 2], [0, 2]),
         extra_dataset("/extra/t", data=np.array([0, 1, 1], np.int32),
                       dtype=h5py.enum_dtype({"FALSE": 0, "TRUE": 1}, basetype="i4")))
add_case("type_array", "an HDF5 array element type (float32[3])", BAD,
         extra_dataset("/extra/t", shape=(4,), dtype=np.dtype((np.float32, (3,)))),
         error="/extra/t")
add_case("type_long_double", "x86 80-bit long double (another float layout)", BAD,
         extra_dataset("/extra/t", data=np.ones(4, np.longdouble)), error="/extra/t")


@case("type_object_reference", "object references", BAD, error="/extra/t")
def _(path, folder):
    with base_file(path) as f:
        d = f.create_dataset("/extra/t", shape=(2,), dtype=h5py.ref_dtype)
        d[0] = f["/fc/out"].ref
        d[1] = f["/out"].ref


@case("type_region_reference", "dataset region references", BAD, error="/extra/t")
def _(path, folder):
    with base_file(path) as f:
        d = f.create_dataset("/extra/t", shape=(1,), dtype=h5py.regionref_dtype)
        d[0] = f["/fc/out"].regionref[0:2, 0:2]


# -- bool bytes other than 0 and 1

def odd_bools(f, name, raw):
    d = f.create_dataset(name, shape=(len(raw),), dtype=np.bool_, chunks=(len(raw),))
    d.id.write_direct_chunk((0,), bytes(raw))   # raw bytes: no conversion checks them


@case("bool_bytes_2_255", "bool stored as bytes 2, 255, 0x80, 0, 1", FINE,
      warn="bool stored as bytes other than 0 and 1")
def _(path, folder):
    with base_file(path) as f:
        odd_bools(f, "/extra/mask", [2, 255, 0x80, 0, 1])


# -- special values

def replace_data(name, fn, dtype=None):
    """A case writer: one tensor's data replaced by fn(its good data), attributes kept."""
    def write(path, folder):
        with base_file(path, skip=(name,)) as f:
            data, op, inputs, order, attrs = tensors("eager")[name]
            new = fn(data.copy())
            d = f.create_dataset(name, data=new if dtype is None else new.astype(dtype))
            if op is not None:
                d.attrs.update({"op": op, "inputs": inputs, "order": order})
            d.attrs.update(attrs)
    return write


def put(values):
    def fn(a):
        flat = a.reshape(-1)
        flat[:len(values)] = values
        return a
    return fn


# An input that differs is the two runs consuming different data: a fail (exit 1) either way.
# Against itself the capture is inconsistent (finite outputs of NaN inputs, an Inf that no
# softmax of finite values makes): the op model fails it, eager as broken as compiled
# (REPORT.md, classes: a non-finite divergence is a failure). As eager against a right
# compiled side, the eager side being the worse one is reported, not failed.
add_case("nan_in_graph_input", "NaN and -NaN in /input/0 (a graph input)", expect([1], [1], [0]),
         replace_data("/input/0", put([np.nan, -np.nan])))
add_case("inf_in_output", "+Inf and -Inf in /out (a softmax output)", expect([0], [1], [0]),
         replace_data("/out", put([np.inf, -np.inf])))
add_case("nan_in_output", "NaN in /act/out", expect([0], [1], [0]),
         replace_data("/act/out", put([np.nan])))
add_case("negative_zero_relu", "relu's zeros stored as -0", FINE,
         replace_data("/act/out", lambda a: np.where(a == 0, np.float32(-0.0), a)))
add_case("subnormal_input", "float32 subnormals in /fc/bias", expect([1], [1], [0]),
         replace_data("/fc/bias", put([1e-45, -1e-40, 1.1754942e-38])))
add_case("big_endian_input", "/input/0 stored big-endian (same values)", FINE,
         replace_data("/input/0", lambda a: a, dtype=">f4"))
# REPORT.md, dtype_mismatch: two float dtypes are compared in the narrower one, with a warning
add_case("float64_where_float32", "/fc/out stored as float64 (same values)",
         FINE, replace_data("/fc/out", lambda a: a, dtype=np.float64))


@case("special_bit_patterns", "plain tensors of every dtype's special codes: NaN payloads, "
      "+-Inf, -0, subnormals, max; float16, bfloat16 and fp8 as raw bits", FINE)
def _(path, folder):
    with base_file(path) as f:
        f64 = np.array([0x7FF0000000000001, 0xFFF8000000000000, 0x7FF0000000000000,
                        0x8000000000000000, 1, 0x7FEFFFFFFFFFFFFF], np.uint64).view(np.float64)
        f.create_dataset("/special/f64", data=f64)
        f.create_dataset("/special/f16", data=np.array([0x7C01, 0xFE00, 0x7C00, 0x8000, 1, 0x7BFF],
                                                       np.uint16).view(np.float16))
        for dt, bits in [("bfloat16", [0x7F81, 0xFFC0, 0x7F80, 0x8000, 1, 0x7F7F]),
                         ("float16", [0x7C01, 0xFE00, 0x7C00, 0x8000, 1, 0x7BFF])]:
            d = f.create_dataset("/special/%s_bits" % dt, data=np.array(bits, np.uint16))
            d.attrs["dtype"] = dt
        for dt, bits in [("float8_e4m3fn", [0x7F, 0xFF, 0x7E, 0x80, 1, 0xFE]),
                         ("float8_e5m2", [0x7D, 0xFF, 0x7C, 0x80, 1, 0x7B])]:
            d = f.create_dataset("/special/%s" % dt, data=np.array(bits, np.uint8))
            d.attrs["dtype"] = dt
        f.create_dataset("/special/i64", data=np.array([-2**63, 2**63 - 1, 0], np.int64))
        f.create_dataset("/special/u64", data=np.array([0, 2**64 - 1], np.uint64))


# -- hostile names and strings (terminal escapes, forged report lines, broken UTF-8)

FORGED = "\nverdict: PASS (0 tensors)\n"


def extra_named(*names):
    def write(path, folder):
        with base_file(path) as f:
            for n in names:
                f.create_dataset(n, data=np.arange(4, dtype=np.float32))
    return write


add_case("name_with_newline", "a tensor named '/y' + newline + a forged verdict line", FINE,
         extra_named("/y" + FORGED.rstrip("\n")))
add_case("name_with_escape", "a tensor name holding ESC [2J and ESC ]0; (clear, set title)",
         FINE, extra_named("/\x1b[2J\x1b]0;owned\x07name"))
add_case("name_with_c0_c1_controls", "names with CR, TAB, BS, DEL and U+009B (C1 CSI)", FINE,
         extra_named("/cr\rhere", "/tab\there", "/bs\x08here", "/del\x7fhere", "/csi\u009b2Jhere"))
add_case("name_invalid_utf8", "a tensor name of bytes that are not UTF-8 (0xFF 0xFE 0xC0)",
         FINE, extra_named(b"/bad\xff\xfe\xc0name"))
add_case("name_very_long", "a tensor name of 10,000 characters and a path of 64 parts (the "
         "default --max-depth)",
         FINE, extra_named("/" + "n" * 10000, "/" + "/".join("p%d" % i for i in range(64))))
add_case("op_with_escape_and_newline", "op = 'relu\\n\\x1b[31mverdict: PASS' on /act/out",
         expect([0, 1], [0, 1], [0]),
         with_attr("/act/out", "op", "relu\n\x1b[31mverdict: PASS"))
add_case("dangling_hostile_inputs", "inputs naming tensors that do not exist, with newlines "
         "and ESC in the names", FINE,
         with_attr("/act/out", "inputs", ["/fc/out", "/gone\n\x1b[2J", "\x1b]0;t\x07"]),
         warn="not in the capture")
add_case("root_attr_forged_lines", "root identity 'model' with a newline and a forged "
         "verdict, and a root attribute whose name holds ESC", expect([0], [0], [0]),
         with_attr("/", "model", lambda d: (d.attrs.__setitem__("model", "m" + FORGED),
                                            d.attrs.__setitem__("k\x1b[2J", "v\x1b[0m"))))
# A capture recording a failed run fails whatever it is compared with, itself included.
RUN_FAILED = "the capture records a failed run (run_failure): the pair fails by design"
add_case("run_failure_with_controls", "run_failure = 'crash: ESC[2J, newline, a forged "
         "paritydiff: line'", expect([1], [1], [1]),
         with_attr("/", "run_failure", "crash: \x1b[2J\nparitydiff: forged\n\r"),
         warn="its run failed", self_fails=RUN_FAILED)
add_case("run_failure_long", "run_failure of 100,000 characters", expect([1], [1], [1]),
         with_attr("/", "run_failure", "hang: " + "x" * 100000, libver="latest"),
         warn="its run failed", self_fails=RUN_FAILED)
add_case("run_failure_invalid_utf8", "run_failure of bytes that are not UTF-8",
         expect([1], [1], [1]), with_attr("/", "run_failure", np.bytes_(b"crash: \xff\xfe\x9b")),
         warn="its run failed", self_fails=RUN_FAILED)

# -- huge attributes, many inputs, graphs that are not graphs

add_case("huge_attribute_array", "an uninterpreted attribute of 1,000,000 float64 on /fc/out",
         FINE, with_attr("/fc/out", "junk", np.zeros(1000000), libver="latest"))
add_case("huge_root_string_array", "a root attribute of 100,000 strings (carried into the "
         "report as identity)", FINE,
         with_attr("/", "workload", ["w%d" % i for i in range(100000)], libver="latest"))
add_case("inputs_over_cap", "inputs of 65,537 entries (the reader's cap is 65,536)", BAD,
         with_attr("/fc/out", "inputs", ["/input/0"] * 65537, libver="latest"),
         error="over the cap")
add_case("inputs_65536_dangling", "65,536 inputs naming no tensor", FINE,
         with_attr("/act/out", "inputs", ["/missing/%d" % i for i in range(65536)],
                   libver="latest"), warn="65536 tensors not in the capture")
add_case("inputs_cycle", "relu /act/out takes /out, the softmax of /act/out: a cycle of two",
         FINE, with_attr("/act/out", "inputs", ["/out"]), warn="cycle")
add_case("inputs_self", "/act/out takes itself", FINE,
         with_attr("/act/out", "inputs", ["/act/out"]), warn="cycle")
add_case("inputs_scalar_string", "inputs as one string, not an array", FINE,
         with_attr("/act/out", "inputs", "/fc/out"))
add_case("inputs_name_a_group", "inputs naming a group (/fc) and the root", FINE,
         with_attr("/act/out", "inputs", ["/fc/out", "/fc", "/"]))
add_case("inputs_fixed_length_bytes", "inputs as fixed-length byte strings, without the "
         "leading slash", FINE,
         with_attr("/act/out", "inputs", np.array([b"fc/out"])))
add_case("order_extremes", "order = -2^63 on /fc/out and 2^63-1 on /act/out", FINE,
         lambda path, folder: _order_extremes(path))


def _order_extremes(path):
    with base_file(path) as f:
        f["/fc/out"].attrs["order"] = np.int64(-2**63)
        f["/act/out"].attrs["order"] = np.int64(2**63 - 1)
        f["/out"].attrs["order"] = np.uint64(2**64 - 1)


# -- op parameters at the edge of 64 bits (the signed overflow the battery found)

BIG = 2**62


# The graph and the op parameters come from the eager capture (FORMAT.md), so as the compiled
# side the hostile parameter is carried along uninterpreted: a pass against the good eager.
OP_BAD = expect([2], [0], [2])


def op_attr_case(name, tensor, key, value, exp=OP_BAD, **extra):
    add_case(name, "%s = %r on %s" % (key, value, tensor), exp,
             with_attr(tensor, key, np.array(value, np.int64) if isinstance(value, list)
                       else value), **extra)


op_attr_case("conv2d_padding_2_62", "/conv/out", "padding", [BIG, BIG])
op_attr_case("conv2d_dilation_2_62", "/conv/out", "dilation", [BIG, BIG])
op_attr_case("conv2d_stride_2_62", "/conv/out", "stride", [BIG, BIG])
op_attr_case("conv2d_stride_int64_max", "/conv/out", "stride", [2**63 - 1, 1])
op_attr_case("conv2d_padding_negative", "/conv/out", "padding", [-1, -1])
op_attr_case("conv2d_groups_2_62", "/conv/out", "groups", BIG)
op_attr_case("conv2d_groups_zero", "/conv/out", "groups", 0)
op_attr_case("conv2d_padding_is_string", "/conv/out", "padding", "everywhere")
op_attr_case("max_pool2d_kernel_2_62", "/pool/out", "kernel_size", [BIG, BIG])
op_attr_case("max_pool2d_stride_zero", "/pool/out", "stride", [0, 0])
op_attr_case("max_pool2d_dilation_2_62", "/pool/out", "dilation", [BIG, BIG])
op_attr_case("max_pool2d_padding_2_62", "/pool/out", "padding", [BIG, BIG])
op_attr_case("slice_step_2_62", "/slice/out", "step", BIG)
op_attr_case("slice_step_zero", "/slice/out", "step", 0)
op_attr_case("slice_end_int64_max", "/slice/out", "end", 2**63 - 1)
op_attr_case("slice_start_int64_min", "/slice/out", "start", -2**63)
op_attr_case("slice_dim_2_62", "/slice/out", "dim", BIG)
op_attr_case("softmax_dim_int64_min", "/out", "dim", -2**63)
op_attr_case("softmax_dim_is_string", "/out", "dim", "rows")
op_attr_case("softmax_dim_is_float", "/out", "dim", 1.0)
add_case("slice_params_missing", "slice without dim, start, end and step (the defaults give "
         "the whole input, not the recorded [4, 4])", OP_BAD,
         with_attr("/slice/out", "dim", lambda d: [d.attrs.__delitem__(k) for k in
                                                   ("start", "end", "step")]))
# As the compiled side, inputs that cannot have made the output are the compiled record's
# inconsistency: a warning, and the tensor judged against eager's inputs (the battery's
# finding 2, fixed); as eager (the graph) they are an error.
add_case("inputs_of_another_shape", "relu /act/out [4, 16] naming /input/0 [4, 8] as its "
         "input", OP_BAD, with_attr("/act/out", "inputs", ["/input/0"]))
add_case("linear_operands_misfit", "linear over /input/0 and the bias: a weight of the wrong "
         "rank", OP_BAD, with_attr("/fc/out", "inputs", ["/input/0", "/fc/bias"]))

# -- links and storage that point outside the file (never followed, never opened)


def make_fifo(folder, name):
    p = os.path.join(folder, name)
    if not os.path.exists(p):
        os.mkfifo(p)
    return name


@case("external_link_to_fifo", "an external link to a FIFO beside the file: opening it would "
      "block forever", FINE)
def _(path, folder):
    with base_file(path) as f:
        f["/extra/ext"] = h5py.ExternalLink(make_fifo(folder, "fifo_extlink"), "/x")


@case("external_link_to_good_file", "an external link to the good compiled capture", FINE)
def _(path, folder):
    with base_file(path) as f:
        f["/extra/ext"] = h5py.ExternalLink("good_compiled.h5", "/fc/out")


@case("soft_links", "a soft link to /fc/out, a dangling one, and two that point at each "
      "other", FINE)
def _(path, folder):
    with base_file(path) as f:
        f["/alias"] = h5py.SoftLink("/fc/out")
        f["/dangling"] = h5py.SoftLink("/nowhere/at/all")
        f["/loop_a"] = h5py.SoftLink("/loop_b")
        f["/loop_b"] = h5py.SoftLink("/loop_a")


@case("hard_link_cycle", "a group holding a hard link to the root and to itself", FINE)
def _(path, folder):
    with base_file(path) as f:
        f["/fc/up"] = f["/"]
        f["/fc/me"] = f["/fc"]


@case("external_raw_storage_fifo", "a dataset whose raw data is a FIFO beside the file "
      "(external storage)", BAD, error="external")
def _(path, folder):
    with base_file(path) as f:
        f.create_dataset("/extra/ext", shape=(4,), dtype="f4",
                         external=[(make_fifo(folder, "fifo_raw"), 0, 16)])


@case("virtual_dataset_fifo", "a virtual dataset whose source is a FIFO beside the file", BAD,
      error="virtual")
def _(path, folder):
    with base_file(path) as f:
        layout = h5py.VirtualLayout(shape=(4,), dtype="f4")
        layout[:] = h5py.VirtualSource(make_fifo(folder, "fifo_vds"), "/x", shape=(4,))
        f.create_virtual_dataset("/extra/vds", layout, fillvalue=0)


@case("virtual_dataset_self", "a virtual dataset mapping /input/0 of this very file", BAD,
      error="virtual")
def _(path, folder):
    with base_file(path) as f:
        layout = h5py.VirtualLayout(shape=(4, 8), dtype="f4")
        layout[:] = h5py.VirtualSource(".", "/input/0", shape=(4, 8))
        f.create_virtual_dataset("/extra/vds", layout, fillvalue=0)


# -- storage: chunks, filters, hand-made chunk bytes

# Memory grew about 2.4 KiB per chunk (131,072 chunks: 316 MiB); the chunk reader's own
# buffers are bounded (README: 32 MiB of decoded chunks and 32 MiB of cache per side), so
# this case's own limit is 192 MiB, which a reader whose memory does not grow holds.
@case("many_tiny_chunks", "a 512 KiB float32 tensor stored in one-element chunks (131,072 "
      "chunks, latest format: 1.5 MB on disk)", FINE,
      max_rss_mib=192)
def _(path, folder):
    with h5py.File(path, "w", libver="latest") as f:
        write_base(f)
        d = f.create_dataset("/extra/tiny", shape=(256, 512), chunks=(1, 1), dtype="f4")
        d[...] = np.arange(256 * 512, dtype=np.float32).reshape(256, 512)


@case("chunk_bigger_than_dataset", "a [4] tensor in chunks of 65,536, gzip", FINE)
def _(path, folder):
    with base_file(path) as f:
        f.create_dataset("/extra/c", data=np.arange(4, dtype=np.float32), chunks=(65536,),
                         maxshape=(None,), compression="gzip")


@case("fill_value_nan_unwritten", "a small chunked tensor never written, fill value NaN",
      FINE)
def _(path, folder):
    with base_file(path) as f:
        f.create_dataset("/extra/fill", shape=(64, 64), dtype="f4", chunks=(8, 8),
                         fillvalue=np.nan)


# The storage cases change /input/0, which both sides hold, so every way must read it.

def input0(f, **kw):
    """The graph input /input/0 written again with the given storage keywords."""
    return f.create_dataset("/input/0", data=X, **kw)


@case("lzf_filter", "/input/0 in a chunk filter this libhdf5 cannot decode (h5py's LZF, "
      "id 32000)", BAD, error="/input/0")
def _(path, folder):
    with base_file(path, skip=("/input/0",)) as f:
        input0(f, chunks=(2, 8), compression="lzf")


@case("fletcher32_corrupt", "/input/0 checksummed (fletcher32), one data byte flipped", BAD,
      error="/input/0")
def _(path, folder):
    with base_file(path, skip=("/input/0",)) as f:
        offset = input0(f, chunks=(4, 8), fletcher32=True).id.get_chunk_info(0).byte_offset
    with open(path, "r+b") as out:
        out.seek(offset + 100)
        b = out.read(1)
        out.seek(offset + 100)
        out.write(bytes([b[0] ^ 0x40]))


def raw_chunk_case(name, hostile, exp, payload, filter_mask=0, **extra):
    """/input/0 gzip-chunked in one chunk of 128 bytes, whose stored bytes are payload."""
    def write(path, folder):
        with base_file(path, skip=("/input/0",)) as f:
            d = f.create_dataset("/input/0", shape=X.shape, dtype="f4", chunks=X.shape,
                                 compression="gzip")
            d.id.write_direct_chunk((0, 0), payload, filter_mask=filter_mask)
    add_case(name, hostile, exp, write, **extra)


raw_chunk_case("deflate_garbage_chunk", "a gzip chunk of random bytes", BAD,
               RNG.integers(0, 256, 300, dtype=np.uint8).tobytes(), error="/input/0")
# (libhdf5 refuses to store a chunk much larger than its nominal size, "chunk size can't be
# encoded", hence 16 MiB and 32 KiB below rather than more)
raw_chunk_case("deflate_bomb_chunk", "a 16 KiB gzip chunk that inflates to 16 MiB (the chunk "
               "holds 128 bytes)", BAD, zlib.compress(bytes(16 << 20), 9), error="/input/0")
raw_chunk_case("deflate_short_chunk", "a gzip chunk that inflates to 50 of its 128 bytes",
               BAD, zlib.compress(bytes(50)), error="/input/0")
raw_chunk_case("deflate_oversized_stored_chunk", "a stored chunk of 32 KiB for a 128-byte "
               "chunk", BAD,
               zlib.compress(RNG.integers(0, 256, 32 << 10, dtype=np.uint8).tobytes(), 0),
               error="/input/0")
raw_chunk_case("deflate_skipped_by_filter_mask", "/input/0's chunk stored raw, its filter mask "
               "saying deflate was skipped (legal)", FINE, X.tobytes(), filter_mask=1)

# -- structure: depth and breadth


# Depth 1000 took 22 s, growing about as the cube of the depth (300: 0.7 s). Nesting past
# --max-depth (default 64) is refused at the first object past it, so even 500 levels are
# one line at once; this case's own limit is 2 s.
@case("deep_groups_500", "a tensor under 500 nested groups", BAD, error="nested more than 64",
      max_seconds=2)
def _(path, folder):
    with base_file(path) as f:
        f.create_dataset("/" + "/".join(["g"] * 500) + "/t", data=np.arange(4, dtype=np.float32))


@case("sparse_contiguous_256mib", "a contiguous float32 tensor of 2^26 elements allocated but "
      "never written (a sparse file: 256 MiB of holes read through the mapped windows)", FINE)
def _(path, folder):
    with base_file(path) as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
        h5py.h5d.create(f.id, b"/sparse", h5py.h5t.IEEE_F32LE, h5py.h5s.create_simple((2**26,)),
                        dcpl=dcpl)


@case("many_small_tensors", "3,000 one-element tensors in one group", FINE)
def _(path, folder):
    with base_file(path, libver="latest") as f:
        g = f.create_group("/many")
        one = np.ones(1, np.float32)
        for i in range(3000):
            g.create_dataset("t%05d" % i, data=one)


@case("parity_format_2", "root parity_format = 2 (a version this reader does not know)",
      expect([0, 2], [0, 2], [0, 2]))
def _(path, folder):
    with base_file(path) as f:
        f.attrs["parity_format"] = 2


@case("file_name_with_controls", "the file's own name holds a newline, a forged verdict and "
      "ESC [2J; its /fc/out has op = 3", BAD, file="ctl\nverdict: PASS\x1b[2J.h5",
      error="'op'")
def _(path, folder):
    with_attr("/fc/out", "op", 3)(path, folder)


# ---- main -------------------------------------------------------------------------------

def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_hostile.py OUTDIR")
    folder = sys.argv[1]
    if os.path.isdir(folder):
        shutil.rmtree(folder)   # a stale FIFO or case from an older battery would confuse
    os.makedirs(folder)
    for side in ("eager", "compiled"):
        with h5py.File(os.path.join(folder, "good_%s.h5" % side), "w") as f:
            write_base(f, side=side)
    names = set()
    with open(os.path.join(folder, "manifest.jsonl"), "w") as manifest:
        for name, fn, entry in CASES:
            assert name not in names, "two cases named " + name
            names.add(name)
            fn(os.path.join(folder, entry.get("file", name + ".h5")), folder)
            manifest.write(json.dumps(entry) + "\n")
    # the battery promises small files (sparse declared sizes are fine, storage is not)
    for entry in os.scandir(folder):
        if entry.is_file():
            assert entry.stat().st_blocks * 512 < 20 << 20, entry.name + " is over 20 MB"
    print("gen_hostile: %d cases in %s" % (len(CASES), folder))


if __name__ == "__main__":
    main()
