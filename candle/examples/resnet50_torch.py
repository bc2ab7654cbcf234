"""PyTorch eager beside the candle example: torchvision's ResNet-50 (random weights, eval mode, no
grad), NCHW, timed the same way as examples/resnet50.rs (median of N forwards, each synchronized,
after 3 warm-ups). fp32 runs twice: with PyTorch's default (cuDNN convolutions in TF32) and with
TF32 off.

    python3 resnet50_torch.py [--batch 1,32] [--dtype f32,f16] [--iters 20] [--json FILE]
"""
import argparse, json, time

import torch
import torchvision


def timed(model, x, iters):
    with torch.no_grad():
        for _ in range(3):
            model(x)
        torch.cuda.synchronize()
        t = []
        for _ in range(iters):
            start = time.perf_counter()
            model(x)
            torch.cuda.synchronize()
            t.append(time.perf_counter() - start)
    t.sort()
    return t[len(t) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", default="1,32")
    ap.add_argument("--dtype", default="f32,f16")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    torch.manual_seed(0)
    print(f"| dtype | batch | PyTorch {torch.__version__} eager, cuDNN {torch.backends.cudnn.version()} | ms / forward | images/s |")
    print("| --- | --- | --- | --- | --- |")
    for dt in a.dtype.split(","):
        dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dt]
        model = torchvision.models.resnet50(weights=None).eval().cuda().to(dtype)
        variants = [("default (TF32 convolutions)", True), ("TF32 off", False)] if dt == "f32" else [("default", True)]
        for batch in map(int, a.batch.split(",")):
            x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=dtype)
            for name, tf32 in variants:
                torch.backends.cudnn.allow_tf32 = tf32
                t = timed(model, x, a.iters)
                print(f"| {dt} | {batch} | {name} | {t * 1e3:.3f} | {batch / t:.1f} |")
                rows.append({"dtype": dt, "batch": batch, "pytorch": name, "ms": t * 1e3, "images_per_s": batch / t})
                if a.json:
                    json.dump(rows, open(a.json, "w"), indent=1)
    torch.backends.cudnn.allow_tf32 = True


if __name__ == "__main__":
    main()
