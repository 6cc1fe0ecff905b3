#!/usr/bin/env python3
"""Checks the arguments of every cuBLAS call in an emitted CUDA step without a GPU.

  gemm_args.py STEP.cu

Each cuBLAS call of a generated step sits next to its host twin (the CPU runtime's kernel on the
same offsets, which the host build runs):

  #ifdef GRAPHC_HOST_SHIM
    graphc::rt::batchMatmul(F32(a), F32(b), F32(c), batch, m, n, k, transA, transB);
  #else
    GRAPHC_CUBLAS(cublasSgemmStridedBatched(ctx->cublas, ...), ...);
  #endif

For each pair this script fills an arena with random floats, runs the host kernel's row-major
definition and cuBLAS's documented column-major definition of the call (operation, dimensions,
leading dimensions, strides and batch count, as read from the source) on two copies, and requires
the two arenas to be equal. So it checks that the emitted cuBLAS arguments compute what the CPU
target computes, which the host build cannot (it never calls cuBLAS). Pure Python, small shapes.

Prints one line per call and "checked N cuBLAS calls", or what differs (exit 1).
"""

import random
import re
import sys

sys.dont_write_bytecode = True

PAIR = re.compile(r"#ifdef GRAPHC_HOST_SHIM\n\s*(?:::)?graphc::rt::(\w+)\(([^;\n]*)\);\n#else\n"
                  r"(?:\s*\{\n\s*const float alpha = ([^,\n]+), beta = ([^;\n]+);\n)?"
                  r"\s*GRAPHC_CUBLAS\((cublasSgemm\w*)\(([^;]*?)\),\s*\n\s*\"[^\"]*\", (\"[^\"]*\")\);")
# graph.attention's GEMMs run in a loop over blocks of query rows:
#   for (int64_t n = 0; n < BLOCKS; ++n) {
#     const int64_t i0 = ::graphc::rt::attentionBlockOrder(REVERSED, n, BLOCKS) * T;
#     const int64_t rows = M - i0 < T ? M - i0 : T;
#     const int64_t cols = ::graphc::rt::attentionBlockKeys(CAUSAL, i0, rows, N);
# their arguments are expressions of i0, rows (T, or fewer in the last block), cols (the keys
# the block reaches: N, or i0 + rows in a causal block) and accumulate (0 in the block run
# first, 1 after); each is checked for the block run first and for the one run last.
BLOCK_LOOP = re.compile(
    r"for \(int64_t n = 0; n < (\d+); \+\+n\) \{\n\s*const int64_t i0 = "
    r"::graphc::rt::attentionBlockOrder\((true|false), n, \d+\) \* (\d+);\n\s*"
    r"const int64_t rows = (\d+) - i0 [^\n]*\n\s*const int64_t cols = "
    r"::graphc::rt::attentionBlockKeys\((true|false), i0, rows, (\d+)\);")


def split_args(text):
    return [a.strip() for a in text.replace("\n", " ").split(",")]


ENV = {}  # i0, rows and accumulate of the attention block being checked


def value(arg):
    """An argument as a number: F32(offset) -> the float index, literals -> int/bool/float,
    expressions of the block loop's variables (ENV) evaluated."""
    m = re.fullmatch(r"F32\((\d+)\)", arg)
    if m:
        offset = int(m.group(1))
        assert offset % 4 == 0, arg
        return offset // 4
    if arg in ("true", "false"):
        return arg == "true"
    if arg == "nullptr":
        return None
    if re.fullmatch(r"\d+l*", arg):
        return int(arg.rstrip("l"))
    expr = re.sub(r"F32\((\d+)\)", lambda g: str(int(g.group(1)) // 4), arg)
    expr = re.sub(r"\(([-0-9.e]+)f\)", r"(\1)", expr)          # float literals (0.125f)
    expr = re.sub(r"\b(\d+)ll\b", r"\1", expr).replace("int(", "(")
    expr = re.sub(r"\b([0-9.]+)f\b", r"\1", expr)
    return eval(expr, {"__builtins__": {}}, dict(ENV))


def host_gemm(mem, a, b, c, m, n, k, trans_a, trans_b):
    """The CPU runtime's matmul: C[m,n] = op(A) op(B), row-major."""
    for i in range(m):
        for j in range(n):
            s = 0.0
            for l in range(k):
                av = mem[a + (l * m + i if trans_a else i * k + l)]
                bv = mem[b + (j * k + l if trans_b else l * n + j)]
                s += av * bv
            mem[c + i * n + j] = s


def run_host(mem, fn, args):
    v = [value(x) for x in args]
    if fn == "matmul":
        a, b, c, m, n, k, ta, tb = v
        host_gemm(mem, a, b, c, m, n, k, ta, tb)
    elif fn == "batchMatmul":
        a, b, c, batch, m, n, k, ta, tb = v
        for i in range(batch):
            host_gemm(mem, a + i * m * k, b + i * k * n, c + i * m * n, m, n, k, ta, tb)
    elif fn == "stridedBatchMatmul":
        a, sa, b, sb, c, sc, batch, m, n, k, ta, tb, alpha, beta = v
        for i in range(batch):
            C = c + i * sc
            old = [mem[C + e] for e in range(m * n)]
            host_gemm(mem, a + i * sa, b + i * sb, C, m, n, k, ta, tb)
            for e in range(m * n):
                mem[C + e] = alpha * mem[C + e] + beta * old[e]
    elif fn == "dense":
        x, w, bias, y, rows, inputs, outputs, tw = v
        assert bias is None, "the bias is a separate kernel"
        host_gemm(mem, x, w, y, rows, outputs, inputs, False, tw)
    else:
        raise ValueError("unknown host twin graphc::rt::" + fn)


def run_cublas(mem, call, args, alpha_beta):
    """cuBLAS's column-major definition: alpha and beta are kOne and kZero, or the local
    `alpha` and `beta` the call's block declares (alpha_beta: their expressions)."""
    assert args[0] == "ctx->cublas", args
    scalars = {"&kOne": 1.0, "&kZero": 0.0}
    if alpha_beta[0]:
        scalars.update({"&alpha": value(alpha_beta[0]), "&beta": value(alpha_beta[1])})
    op_a, op_b = args[1], args[2]
    m, n, k = (value(x) for x in args[3:6])
    alpha = scalars[args[6]]
    if call == "cublasSgemmStridedBatched":
        a, lda, sa, b, ldb, sb = (value(x) for x in args[7:13])
        beta = scalars[args[13]]
        c, ldc, sc, batch = (value(x) for x in args[14:18])
    else:
        assert call == "cublasSgemm", call
        a, lda, b, ldb = (value(x) for x in args[7:11])
        beta = scalars[args[11]]
        c, ldc = value(args[12]), value(args[13])
        sa = sb = sc = 0
        batch = 1
    ta, tb = op_a == "CUBLAS_OP_T", op_b == "CUBLAS_OP_T"
    for p in range(batch):
        A, B, C = a + p * sa, b + p * sb, c + p * sc
        for i in range(m):
            for j in range(n):
                s = 0.0
                for l in range(k):
                    av = mem[A + (l + i * lda if ta else i + l * lda)]
                    bv = mem[B + (j + l * ldb if tb else l + j * ldb)]
                    s += av * bv
                mem[C + i + j * ldc] = alpha * s + beta * mem[C + i + j * ldc]


def block_cases(text, position):
    """The loop variables under which the call at `position` is checked: none outside an
    attention block loop; inside one, the first block and the last."""
    loops = [m for m in BLOCK_LOOP.finditer(text, 0, position)]
    if not loops or text.count("\n  }\n", loops[-1].end(), position):
        return [{}]
    loop = loops[-1]
    blocks, reversed_, block = int(loop.group(1)), loop.group(2) == "true", int(loop.group(3))
    total, causal, keys = int(loop.group(4)), loop.group(5) == "true", int(loop.group(6))
    cases = []
    for n in sorted({0, blocks - 1}):
        i0 = (blocks - 1 - n if reversed_ else n) * block
        rows = min(block, total - i0)
        cols = min(i0 + rows, keys) if causal else keys
        cases.append({"i0": i0, "rows": rows, "cols": cols, "accumulate": 0.0 if n == 0 else 1.0})
    return cases


def main():
    text = open(sys.argv[1]).read()
    pairs = [(m.start(), m.groups()) for m in PAIR.finditer(text)]
    calls = len(re.findall(r"GRAPHC_CUBLAS\(", text))
    if len(pairs) != calls:
        print("FAIL: %d cuBLAS calls, %d with a recognised host twin" % (calls, len(pairs)))
        return 1
    # The planned arena ("the single device allocation of N bytes" in the file's header).
    floats = int(re.search(r"single device allocation of (\d+) bytes", text).group(1)) // 4
    rng = random.Random(7)
    failed = 0
    for position, (fn, host_args, alpha, beta, call, cublas_args, op) in pairs:
        host_args, cublas_args = split_args(host_args), split_args(cublas_args)
        for env in block_cases(text, position):
            ENV.clear()
            ENV.update(env)
            size = floats
            base = [rng.uniform(-1.0, 1.0) for _ in range(size)]
            host, dev = list(base), list(base)
            run_host(host, fn, host_args)
            run_cublas(dev, call, cublas_args, (alpha, beta))
            bad = [i for i in range(size)
                   if abs(host[i] - dev[i]) > 1e-9 * max(1.0, abs(host[i]))]
            where = " (query rows from %d)" % env["i0"] if env else ""
            print("%s %s%s: %s" % (call, op, where,
                                   "differs at %d floats" % len(bad) if bad else "ok"))
            failed += bool(bad)
    print("checked %d cuBLAS calls" % len(pairs))
    print("PASS" if not failed else "FAIL")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
