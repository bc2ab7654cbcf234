"""What the GPU smoke scripts (dev/hopper_smoke.py, dev/hopper_ws_smoke.py) share: problem
geometry helpers, and the supervisor that runs the cases in child processes, moving on past a
kernel fault (which poisons the CUDA context) or a hang, and prints the closing SUMMARY line.

A script's child prints `RUN <case> <kernel>` before each launch, `PASS ...` / `FAIL ...` lines,
and exits 0 when done, 4 when the module did not load, 3 after a launch error that lost the
context (it printed the FAIL itself).
"""
import os
import queue
import random
import re
import subprocess
import sys
import threading
import time

TOTAL_BUDGET_S = 110  # a run must end within 2 minutes
HANG_S = float(os.environ.get("HOPPER_SMOKE_HANG_S", 25))  # silent this long = a hung kernel

# (n, c, h, w, k, r, s, pad, stride, dil; pad/stride/dil the same on both axes unless a tuple): a problem small enough to read a wrong layout off, and
# the seed suite's tensor-core shape.
TINY = (1, 64, 8, 8, 128, 1, 1, 0, 1, 1)
SEED = (256, 256, 14, 14, 512, 3, 3, 1, 1, 1)
if os.environ.get("HOPPER_SMOKE_SEED"):  # a smaller stand-in, for dry runs of the scripts
    SEED = tuple(int(v) for v in os.environ["HOPPER_SMOKE_SEED"].split(","))


def out_size(h, r, pad, stride, dil):
    return (h + 2 * pad - dil * (r - 1) - 1) // stride + 1


def random_cases(count, seed, max_c8, max_k8):
    """`count` random valid problems: C and K multiples of 8 up to 8*max_c8 and 8*max_k8, N up to
    8, sizes 3..20, filters up to 5x5, padding up to 2, stride and dilation up to 2 per axis."""
    rng = random.Random(seed)
    cases = []
    while len(cases) < count:
        n = rng.randint(1, 8)
        c = 8 * rng.randint(1, max_c8)
        k = 8 * rng.randint(1, max_k8)
        h, w = rng.randint(3, 20), rng.randint(3, 20)
        r, s = rng.randint(1, 5), rng.randint(1, 5)
        pad = (rng.randint(0, 2), rng.randint(0, 2))
        stride = (rng.randint(1, 2), rng.randint(1, 2))
        dil = (rng.randint(1, 2), rng.randint(1, 2))
        if out_size(h, r, pad[0], stride[0], dil[0]) < 1 or out_size(w, s, pad[1], stride[1], dil[1]) < 1:
            continue
        cases.append((n, c, h, w, k, r, s, pad, stride, dil))
    return cases


def pair(v):
    return v if isinstance(v, tuple) else (v, v)


def describe(case):
    n, c, h, w, k, r, s, pad, stride, dil = case
    return f"N{n} C{c} {h}x{w} -> K{k} {r}x{s} pad{pair(pad)} stride{pair(stride)} dil{pair(dil)}"


def run_child(script, ptx, start, budget, lines):
    """Runs `script`'s cases from `start` in a child process, echoing its output (except the RUN lines)
    and appending it to `lines`. Returns ("done", None) when the child finished, else (what went
    wrong, (case, kernel) of the last RUN line)."""
    cmd = [sys.executable, os.path.abspath(script), ptx, "--child", str(start)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    q = queue.Queue()
    threading.Thread(target=lambda: ([q.put(l) for l in proc.stdout], q.put(None)), daemon=True).start()
    deadline = time.time() + budget
    running = None
    while True:
        try:
            line = q.get(timeout=max(0.1, min(HANG_S, deadline - time.time())))
        except queue.Empty:
            proc.kill()
            proc.wait()
            return (f"hang (no output for {HANG_S} s or out of time)", running)
        if line is None:
            break
        m = re.match(r"RUN (\d+) (\S+)", line)
        if m:
            running = (int(m.group(1)), m.group(2))
            continue
        if line.startswith("CONTEXT_LOST"):
            continue
        print(line, end="", flush=True)
        lines.append(line)
    rc = proc.wait()
    if rc == 0:
        return ("done", None)
    if rc == 4:
        return ("module load", None)
    if rc == 3:
        return ("launch error that lost the CUDA context", running)
    return (f"child exit status {rc}", running)


def supervise(script, ptx, n_cases, t0):
    """Runs `script`'s `n_cases` cases in child processes, a fresh child after each fault or hang
    (the faulting case's remaining kernels skipped), within TOTAL_BUDGET_S of `t0`; prints the
    SUMMARY line and returns whether everything passed."""
    start, lost, lines = 0, [], []
    while start < n_cases:
        left = TOTAL_BUDGET_S - (time.time() - t0)
        if left < 10:
            print(f"out of time budget before case {start}")
            lines.append(f"FAIL case {start} not run: out of time\n")
            break
        outcome, running = run_child(script, ptx, start, left, lines)
        if outcome in ("done", "module load"):
            break
        # A fault or hang in case `running` (from its RUN line): go on with the next case.
        ci = running[0] if running else start
        if not outcome.startswith("launch error"):  # (the child printed that FAIL itself)
            lines.append(f"FAIL case {ci} {running[1] if running else ''}: {outcome}\n")
        print(f"FAULT {outcome} in case {ci} {running[1] if running else ''}; the remaining kernels of that case are skipped")
        lost.append(ci)
        start = ci + 1
        if len(lost) >= 4:
            print("too many faulting cases; stopping")
            break

    passed = sum(1 for l in lines if l.startswith("PASS"))
    failed = sum(1 for l in lines if l.startswith("FAIL"))
    verdict = "PASS" if failed == 0 and passed > 0 else "FAIL"
    print(f"SUMMARY: {verdict}: {passed} passed, {failed} failed, {len(lost)} faults or hangs (cases {lost}), {time.time() - t0:.1f} s")
    return verdict == "PASS"
