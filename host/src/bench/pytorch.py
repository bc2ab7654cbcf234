# Times torch.nn.functional.conv2d on the shapes convrs bench sends on stdin (JSON), the way a
# PyTorch user gets it: cudnn.benchmark on; fp32 NCHW with TF32 off ("fp32"), fp32 NCHW with
# TF32 on (PyTorch's default for convolutions, "tf32"), fp16 and bf16 channels_last ("fp16", "bf16"),
# and fp16 and bf16 on contiguous NCHW tensors ("fp16_nchw", "bf16_nchw"). A shape's "groups" (1 if
# absent) is F.conv2d's groups, with a K x C/groups x R x S weight.
# A shape's "epilogue" (none if absent) makes the call the whole layer
# y = act(alpha * conv(x, w) * scale[k] + bias[k] + beta * residual), written as a PyTorch user
# writes it in eager mode (`layer`): the bias inside F.conv2d where nothing comes between, one
# elementwise op for scale, alpha and bias otherwise, the residual added in place, the activation
# in place where PyTorch has that form. Its operands are per input set, in the set's dtype (the
# residual also in its memory format), and timed with the convolution.
# Timing as convrs's own rows (host/src/timing.rs), per the request's "timing":
# - "graph": the calls are captured into a torch.cuda.CUDAGraph, and each timed replay follows
#   another replay, so the figure is device time per call, Python's dispatch excluded;
# - "events": many back-to-back calls between two CUDA events (Python's dispatch hides behind
#   the GPU work only where a call's kernels outlast it).
# The calls rotate over `sets` input sets, as convrs's own rows do, so neither side runs from a
# warm L2; and each set's output is held until the set comes round again, as convrs's rows (and
# its cuDNN rows) write one output buffer per set. An output dropped at once would give the next
# call the same block from the caching allocator, written again while still in L2: measured on an
# H100 (dev/torch_output_reuse.py), 8,64,56,56->256 1x1 fp16 took 6.6 us a call so, 7.8 us with one
# output per set, what our cuDNN rows took on cuDNN's same kernel (issue 26's "flagged" baselines).
# Progress goes to stderr; the last stdout line is the JSON result.
import json
import math
import sys

import torch
import torch.nn.functional as F

req = json.load(sys.stdin)
torch.backends.cudnn.benchmark = True
dev = torch.device("cuda", req["device"])
torch.cuda.set_device(dev)
out = {"torch": torch.__version__, "cudnn": None, "gpu": torch.cuda.get_device_name(dev), "times": {}}
v = torch.backends.cudnn.version()
if v:
    out["cudnn"] = f"{v // 10000}.{(v % 10000) // 100}.{v % 100}" if v >= 90000 else str(v)
gen = torch.Generator(device=dev)
gen.manual_seed(req.get("seed", 1))


def set_tf32(on):
    # PyTorch 2.9 and later name the convolution precision directly (and object to the legacy
    # flag being mixed in); earlier versions only have the flag.
    conv = getattr(torch.backends.cudnn, "conv", None)
    if conv is not None and hasattr(conv, "fp32_precision"):
        conv.fp32_precision = "tf32" if on else "ieee"
    else:
        torch.backends.cudnn.allow_tf32 = on


def uniform(shape, dtype):
    return (torch.rand(shape, generator=gen, device=dev, dtype=torch.float32) * 2 - 1).to(dtype)


# Graphs sized as convrs sizes its own (host/src/timing.rs sends its constants): replays of at
# least GRAPH_TARGET_MS, of GRAPH_MIN_BATCH to GRAPH_MAX_BATCH calls.
GRAPH_TARGET_MS, GRAPH_MIN_BATCH, GRAPH_MAX_BATCH = req["graph_batch"]


def graph_batch(est_ms):
    if not est_ms > 0:
        return GRAPH_MIN_BATCH
    return max(GRAPH_MIN_BATCH, min(GRAPH_MAX_BATCH, math.ceil(GRAPH_TARGET_MS / est_ms)))


def graph_time(sets, forward, est_ms, trials):
    """Median device time per call of `forward` over `trials` replays of a graph of calls, each
    replay after another so the stream never waits for Python."""
    calls = graph_batch(est_ms)
    side = torch.cuda.Stream()  # warm-up on a side stream before capture, as PyTorch asks
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for operands in sets:
            forward(*operands)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    held = [None] * len(sets)  # one output per set (see the top of the file)
    with torch.cuda.graph(g):
        for i in range(calls):
            held[i % len(sets)] = forward(*sets[i % len(sets)])
    g.replay()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(trials)]
    g.replay()  # the lead replay
    for start, end in events:
        start.record()
        g.replay()
        end.record()
    torch.cuda.synchronize()
    times = sorted(start.elapsed_time(end) / calls for start, end in events)
    del g, held
    return times[len(times) // 2]


def weight_shape(s):
    """The filter of a shape in `groups` groups: K x C/G x R x S (torch's weight for groups=G)."""
    return (s["k"], s["c"] // s.get("groups", 1), s["r"], s["s"])


def conv_kwargs(s):
    """F.conv2d's geometry arguments for a shape of the request."""
    return dict(stride=tuple(s["stride"]), padding=tuple(s["pad"]), dilation=tuple(s["dilation"]), groups=s.get("groups", 1))


def epilogue_of(s):
    """A shape's epilogue with every field present (a request without one: the bare convolution)."""
    ep = s.get("epilogue") or {}
    return {
        "scale": bool(ep.get("scale", False)),
        "bias": bool(ep.get("bias", False)),
        "residual": bool(ep.get("residual", False)),
        "alpha": float(ep.get("alpha", 1.0)),
        "beta": float(ep.get("beta", 1.0)),
        "act": ep.get("act", "identity"),
        "slope": float(ep.get("slope", 0.01)),
    }


def activation(ep):
    """The epilogue's activation as a function of y, in place where PyTorch has that form (None: identity)."""
    act, slope = ep["act"], ep["slope"]
    if act == "identity":
        return None
    if act == "relu":
        return F.relu_
    if act == "relu6":
        return lambda y: F.relu6(y, inplace=True)
    if act == "leaky_relu":
        return lambda y: F.leaky_relu_(y, slope)
    if act == "silu":
        return lambda y: F.silu(y, inplace=True)
    if act == "gelu_tanh":
        return lambda y: F.gelu(y, approximate="tanh")
    if act == "gelu":
        return F.gelu
    raise ValueError(f"unknown activation {act!r}")


def layer(ep, kw):
    """forward(x, wt, scale, bias, res): the layer y = act(alpha * conv(x, wt) * scale + bias +
    beta * res) as a PyTorch user writes it in eager mode, with the fewest passes over y that
    the eager API offers (convrs's eager_calls names them)."""
    alpha, beta = ep["alpha"], ep["beta"]
    # cuDNN adds a bias inside the convolution call; only where nothing comes before it.
    bias_in_conv = ep["bias"] and not ep["scale"] and alpha == 1
    act = activation(ep)

    def forward(x, wt, scale, bias, res):
        y = F.conv2d(x, wt, bias if bias_in_conv else None, **kw)
        if ep["scale"] and ep["bias"]:
            y = torch.addcmul(bias.view(1, -1, 1, 1), y, scale.view(1, -1, 1, 1), value=alpha)
        elif ep["scale"]:
            y.mul_(scale.view(1, -1, 1, 1))
            if alpha != 1:
                y.mul_(alpha)
        elif alpha != 1:
            y = torch.add(bias.view(1, -1, 1, 1), y, alpha=alpha) if ep["bias"] else y.mul_(alpha)
        if ep["residual"]:
            y.add_(res, alpha=beta)
        if act is not None:
            y = act(y)
        return y

    return forward


def epilogue_operands(s, ep, dtype, fmt):
    """One input set's (scale, bias, residual), None where the epilogue has none: scale uniform
    in [0.5, 1.5] and bias in [-1, 1) of K values, the residual of the output's shape in the
    set's memory format, all in the data's type (as a model holds its parameters)."""
    k = s["k"]
    scale = (uniform((k,), torch.float32) * 0.5 + 1).to(dtype) if ep["scale"] else None
    bias = uniform((k,), dtype) if ep["bias"] else None
    res = None
    if ep["residual"]:
        p, q = s["out_hw"]
        res = uniform((s["n"], k, p, q), dtype).contiguous(memory_format=fmt)
    return scale, bias, res


def time_config(s, config):
    n, c, h, w = s["n"], s["c"], s["h"], s["w"]
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(config.removesuffix("_nchw"), torch.float32)
    set_tf32(config == "tf32")
    # "fp16"/"bf16" are channels_last; "fp16_nchw"/"bf16_nchw" the same types on contiguous
    # (NCHW) tensors, as a caller holding NCHW passes them.
    fmt = torch.channels_last if config in ("fp16", "bf16") else torch.contiguous_format
    ep = epilogue_of(s)
    sets = []
    for _ in range(s["sets"]):
        x = uniform((n, c, h, w), dtype).contiguous(memory_format=fmt)
        wt = uniform(weight_shape(s), dtype).contiguous(memory_format=fmt)
        sets.append((x, wt) + epilogue_operands(s, ep, dtype, fmt))
    forward = layer(ep, conv_kwargs(s))
    with torch.no_grad():
        for operands in sets:  # the first call per configuration runs cuDNN's benchmark search
            forward(*operands)
        torch.cuda.synchronize()

        def trial(calls):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            held = [None] * len(sets)  # one output per set (see the top of the file)
            start.record()
            for i in range(calls):
                held[i % len(sets)] = forward(*sets[i % len(sets)])
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / calls

        est = trial(len(sets) * 2)
        if req.get("timing", "events") == "graph":
            try:
                return graph_time(sets, forward, est, req.get("trials", 15))
            except Exception as e:  # reported, then timed the other way
                print(f"[pytorch] {s['label']} {config}: graph capture failed ({type(e).__name__}: {e}); timed by events", file=sys.stderr)
        # ~2 ms of GPU work per trial (at least one pass over the sets), so dispatch hides.
        calls = max(len(sets), min(2000, int(2.0 / max(est, 1e-4))))
        calls -= calls % len(sets)
        times = sorted(trial(calls) for _ in range(req.get("trials", 15)))
    del sets
    return times[len(times) // 2]


for i, s in enumerate(req["shapes"]):
    for config in s["configs"]:
        key = f'{s["label"]}|{config}'
        try:
            out["times"][key] = time_config(s, config)
        except Exception as e:  # a shape PyTorch cannot run is reported, not fatal
            out["times"][key] = None
            print(f"[pytorch] {key}: {type(e).__name__}: {e}", file=sys.stderr)
        torch.cuda.empty_cache()
    print(f"[pytorch] {i + 1}/{len(req['shapes'])} {s['label']}", file=sys.stderr, flush=True)
print(json.dumps(out))
