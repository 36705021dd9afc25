#!/usr/bin/env bash
# validate_libm.sh BUILD_DIR [N_RANDOM [THREADS]]
#
# The validation table of issue "semantic judgement": glibc's expf, logf, tanhf, sinf, cosf
# and erff measured against a 160-bit MPFR reference (tests/bench/validate_libm.c) over every
# finite bf16 value, every finite f16 value and N_RANDOM random float32 values (default
# 4,000,000, uniform bit patterns, fixed seed), set beside glibc's own published figures
# (sysdeps/x86_64/fpu/libm-test-ulps, "float:" under Function: "NAME": = round to nearest,
# read from the glibc source tarball of the Debian package glibc-source, which
# scripts/setup-deps.sh installs) and the registry's allowance (tolerance/op_unary.c, read
# from the registry by the program). Prints Markdown on stdout.
#
# Build first:
#   cmake -S . -B build-val -DCMAKE_BUILD_TYPE=Release
#   cmake --build build-val -j2 --target validate_libm
# Without glibc-source the measured columns are still printed, and the published column
# says so.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 3 ]; then
  echo "usage: $0 BUILD_DIR [N_RANDOM [THREADS]]" >&2
  exit 2
fi
build_dir=$1
n_random=${2:-4000000}
threads=${3:-2}
bin="$build_dir/tests/validate_libm"
if [ ! -x "$bin" ]; then
  echo "validate_libm.sh: $bin not found; build it with" >&2
  echo "  cmake --build $build_dir -j2 --target validate_libm" >&2
  exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- glibc's published figures --------------------------------------------------------
published_note=""
tarball=$(ls /usr/src/glibc/glibc-*.tar.* 2>/dev/null | head -n 1 || true)
if [ -n "$tarball" ] \
   && tar -xf "$tarball" --wildcards '*/sysdeps/x86_64/fpu/libm-test-ulps' -O \
        > "$tmp/libm-test-ulps" 2>/dev/null \
   && [ -s "$tmp/libm-test-ulps" ]; then
  # "float:" of each Function: "NAME": block (the round-to-nearest entry; the
  # NAME_downward/_towardzero/_upward blocks are other names and are not read).
  awk '
    /^Function: "/ { fn = $2; gsub(/[":]/, "", fn); next }
    /^$/           { fn = ""; next }
    fn != "" && $1 == "float:" { print fn "\t" $2 }
  ' "$tmp/libm-test-ulps" > "$tmp/published"
  published_source="$(basename "$tarball"): sysdeps/x86_64/fpu/libm-test-ulps, \"float:\" (round to nearest)"
else
  : > "$tmp/published"
  published_note="published: unavailable (glibc-source not installed; \`bash scripts/setup-deps.sh\` installs it)"
  published_source="unavailable (glibc-source not installed)"
fi

# ---- measurement ----------------------------------------------------------------------
start=$(date +%s)
"$bin" "$n_random" "$threads" > "$tmp/measured"
elapsed=$(( $(date +%s) - start ))

glibc_running=$(getconf GNU_LIBC_VERSION 2>/dev/null || echo "glibc (unknown version)")
if grep -qw fma /proc/cpuinfo 2>/dev/null; then fma="yes (glibc selects its FMA variants of expf, logf, sinf, cosf)"; else fma="no"; fi

echo "## glibc libm (float32) against MPFR"
echo
echo "- libm measured: $glibc_running (the running one); CPU has FMA: $fma"
echo "- reference: $(sed -n 's/^# validate_libm: //p' "$tmp/measured")"
echo "- published: $published_source"
echo "- allowance: the registry's bound for the op, float32 in and out, in ulps of float32 (tolerance/op_unary.c, C_FN)"
echo "- error = |glibc(x) - f(x)| / ulp_f32(f(x)), ulp as parity_ulp_at (2^-149 for subnormal results); up to 0.5 = correctly rounded; NaN/Inf inputs, NaN references (log x < 0) and infinite results (log 0, float32 overflow of exp; checked separately) are excluded"
echo "- runtime: ${elapsed} s"
[ -n "$published_note" ] && { echo; echo "$published_note"; }
echo

awk -F'\t' -v pubfile="$tmp/published" '
  BEGIN {
    while ((getline line < pubfile) > 0) { split(line, a, "\t"); pub[a[1]] = a[2] }
    nfn = 0
  }
  $1 == "A" { allow[$2] = $3; next }
  $1 == "R" {
    fn = $2; set = $3
    if (!(fn in seen)) { seen[fn] = 1; order[++nfn] = fn }
    meas[fn, set] = $4; skip[fn, set] = $5; ovf[fn, set] = $6; ovfbad[fn, set] = $7
    err[fn, set] = $8; xhex[fn, set] = $9; xdec[fn, set] = $10; y[fn, set] = $11
    ref[fn, set] = $12; above[fn, set] = $13
    next
  }
  END {
    nset = split("bf16 f16 random", sets, " ")
    print "| function | inputs measured (bf16 / f16 / random fp32) | max ulp, bf16 grid | max ulp, f16 grid | max ulp, random fp32 | input where the max occurs | glibc published ulp (float, to nearest) | registry allowance (ulp) | measured <= published? | published <= allowance? |"
    print "|---|---|---:|---:|---:|---|---:|---:|---|---|"
    for (i = 1; i <= nfn; i++) {
      fn = order[i]; best = -1; bs = ""
      for (s = 1; s <= nset; s++) {
        k = sets[s]
        if (err[fn, k] != "-" && (best < 0 || err[fn, k] + 0 > best)) { best = err[fn, k] + 0; bs = k }
      }
      p = (fn in pub) ? pub[fn] : "unavailable"
      al = (allow[fn] == "-" || allow[fn] == "") ? "- (not in registry)" : allow[fn]
      if (p == "unavailable") le = "unknown"
      else if (best <= p + 0) le = "yes"
      else le = sprintf("**no** (%.4f > %s)", best, p)
      if (p == "unavailable" || al ~ /^-/) pa = "-"
      else pa = (p + 0 <= al + 0) ? "yes" : "**no**"
      where = (bs == "") ? "-" : sprintf("x = %s (%s), %s: glibc %s, exact %s", xhex[fn, bs], xdec[fn, bs], bs, y[fn, bs], ref[fn, bs])
      printf "| %sf | %s / %s / %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", fn,
        meas[fn, "bf16"], meas[fn, "f16"], meas[fn, "random"],
        err[fn, "bf16"], err[fn, "f16"], err[fn, "random"], where, p, al, le, pa
    }
    print ""
    print "Per input set: worst input, and how many measured inputs glibc did not round correctly (error > 0.5 ulp). Excluded: inputs whose reference is NaN (log of x < 0) or infinite (log of +-0, and exp of x > 88.72, which overflows float32); the infinite ones are checked only for glibc returning the same infinity (next column: how many it did not)."
    print ""
    print "| function | set | measured | excluded (of which infinite) | infinite, glibc differs | max ulp | worst x | glibc(x) | f(x) (MPFR, to double) | not correctly rounded |"
    print "|---|---|---:|---:|---:|---:|---|---|---|---:|"
    for (i = 1; i <= nfn; i++) {
      fn = order[i]
      for (s = 1; s <= nset; s++) {
        k = sets[s]
        printf "| %sf | %s | %s | %s (%s) | %s | %s | %s | %s | %s | %s |\n", fn, k, meas[fn, k],
          skip[fn, k], ovf[fn, k], ovfbad[fn, k], err[fn, k], xhex[fn, k], y[fn, k], ref[fn, k], above[fn, k]
      }
    }
  }
' "$tmp/measured"
