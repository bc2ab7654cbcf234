# What the best possible kernel could reach against the same-run baseline, per shape and over a suite:
#   floor = max(FLOPs / GEMM rate, bytes / copy bandwidth) + an empty kernel's time in a graph,
# all three measured on the same GPU by dev/ceilings.py, the bytes being each input element the
# convolution touches (a strided 1x1 layer skips pixels), the filter and the output, once each.
# bound = best baseline / floor. Usage: python3 dev/bound.py CEILINGS.json BENCH.json[.xz]... (ALL=1: per shape)
import json, lzma, math, os, sys

ce = json.load(open(sys.argv[1]))
rate = {"fp16": ce["gemm_fp16_tflops"], "bf16": ce["gemm_bf16_tflops"]}
bw, empty_us = ce["copy_gbps_read_plus_write"], ce["empty_kernel_us_grid132"]


def touched(size, out, k, pad, stride, dil):
    """Input rows (or columns) that some output reads along one axis."""
    return len({o * stride + t * dil - pad for o in range(out) for t in range(k)} & set(range(size)))


def ms(e):
    return e["timing"]["median_ms"] if e and e.get("timing") and e["timing"].get("median_ms") else None


rows = []
for f in sys.argv[2:]:
    for g in json.load(lzma.open(f) if f.endswith(".xz") else open(f))["suites"][0]["groups"]:
        sh = g["shape"]
        n, c, h, w = map(int, sh.split("->")[0].split(","))
        rest = sh.split("->")[1].split()
        k, (r, s) = int(rest[0].split(",")[0]), map(int, rest[0].split(",")[1].split("x"))
        geo = {t[0]: tuple(map(int, t[1:].split(","))) for t in rest[1:]}
        pad, stride, dil = [(v * 2)[:2] for v in (geo.get("p", (0,)), geo.get("s", (1,)), geo.get("d", (1,)))]
        p = (h + 2 * pad[0] - dil[0] * (r - 1) - 1) // stride[0] + 1
        q = (w + 2 * pad[1] - dil[1] * (s - 1) - 1) // stride[1] + 1
        elems = n * c * touched(h, p, r, pad[0], stride[0], dil[0]) * touched(w, q, s, pad[1], stride[1], dil[1]) + k * c * r * s + n * k * p * q
        flop_us = g["flops"] / rate[g["precision"]] / 1e6
        mem_us = 2 * elems / bw / 1e3
        base = min([ms(e) for e in g["cudnn"] if ms(e)] + [ms(g["pytorch"]) or math.inf]) * 1e3
        ours = min([ms(x) for x in g["kernels"] if ms(x) and x["passed"] and x.get("user_layout", True)] or [math.inf]) * 1e3
        floor = max(flop_us, mem_us) + empty_us
        rows.append((base / ours, sh, g["precision"], ours, base, flop_us, mem_us, floor, base / floor))
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
for prec in sorted({r[2] for r in rows}):
    rs = [r for r in rows if r[2] == prec]
    print(f"{prec}: {len(rs)} shapes, ours geomean {gm([r[0] for r in rs]):.3f}x, bound geomean {gm([r[8] for r in rs]):.3f}x "
          f"(bound below 1.5x on {sum(r[8] < 1.5 for r in rs)}); empty kernel {empty_us:.2f} us, {rate[prec]:.0f} TFLOP/s, {bw:.0f} GB/s")
    if os.environ.get("ALL"):
        for r in sorted(rs):
            print("  %.2fx %-34s ours %7.1f us  baseline %7.1f  flop %5.1f  bytes %5.1f  floor %5.1f  bound %.2fx" % (r[0], r[1], r[3], r[4], r[5], r[6], r[7], r[8]))
