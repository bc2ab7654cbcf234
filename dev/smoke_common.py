"""What the GPU smoke scripts (dev/hopper_smoke.py, dev/hopper_ws_smoke.py) share: problem
geometry helpers, and the supervisor that runs the cases in child processes, moving on past a
kernel fault (which poisons the CUDA context) or a hang, and prints the closing SUMMARY line.

A script's child prints `RUN <case> <kernel>` before each launch, `PASS ...` / `FAIL ...` lines,
and exits 0 when done, 4 when the module did not load, 3 after a launch error that lost the
context (it printed the FAIL itself).
"""
import os
import queue
import re
import subprocess
import sys
import threading
import time

TOTAL_BUDGET_S = 110  # a run must end within 2 minutes
HANG_S = float(os.environ.get("HOPPER_SMOKE_HANG_S", 25))  # silent this long = a hung kernel


def out_size(h, r, pad, stride, dil):
    return (h + 2 * pad - dil * (r - 1) - 1) // stride + 1


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
