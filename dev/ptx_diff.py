#!/usr/bin/env python3
"""Compares the entries of two PTX modules body by body, so a refactor can show which kernels'
code it left unchanged.

    python3 dev/ptx_diff.py [--sass ARCH] OLD.ptx NEW.ptx [OLD_PREFIX=NEW_PREFIX ...]

Each entry's text runs from `.visible .entry NAME(` to LLVM's `// -- End function`; its own name
(which the parameter names repeat) is replaced by a placeholder, comments are dropped, and
registers and block labels are renumbered in order of first appearance (their numbers depend on
the entry's place in the module and on LLVM's value numbering, not on the code), the register
declarations' counts too. A rename maps
old entries to new ones by prefix (the longest matching prefix wins), so entries that were only
renamed compare equal. Prints one line per entry (same / DIFFERENT / only old / only new) and
exits 1 if any entry present in both differs.

With --sass ARCH both modules are assembled by ptxas for ARCH and each entry's machine code
(nvdisasm) is compared instead, addresses and branch-target labels dropped: the code that runs.
For entries that differ, the line also says whether the two hold the same instructions in
another order (registers and labels aside), and which instructions one has more of: LLVM
orders and copies registers by where inlined functions are defined, so moving code between
modules reorders the output without changing what it computes.
ptxas and nvdisasm are found through $CONVRS_PTXAS / PATH / the nvidia-cuda-nvcc-cu12 wheel and
$NVDISASM / PATH / the nvidia-cuda-nvdisasm wheel.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile


def entries(path):
    text = open(path).read()
    out = {}
    for m in re.finditer(r"^\.visible \.entry (\w+)\(", text, re.M):
        name = m.group(1)
        end = text.find("// -- End function", m.start())
        body = text[m.start(): end if end >= 0 else len(text)]
        out[name] = canonical(body.replace(name, "@ENTRY@"))
    return out


def canonical(body):
    body = re.sub(r"//[^\n]*", "", body)
    body = re.sub(r"(\.reg \.\w+\s+%\w+)<\d+>", r"\1<N>", body)
    names = {}

    def rename(m):
        return names.setdefault(m.group(0), f"{m.group(1)}#{len(names)}")

    body = re.sub(r"(%[a-z]+)\d+\b|(\$L__BB)\d+_\d+", lambda m: names.setdefault(m.group(0), f"{m.group(1) or m.group(2)}#{len(names)}"), body)
    return "\n".join(l.rstrip() for l in body.splitlines() if l.strip())


def tool(env, name):
    found = os.environ.get(env) or shutil.which(name)
    if found:
        return found
    for base in sys.path:
        hits = glob.glob(os.path.join(base, "nvidia", "*", "bin", name)) + glob.glob(os.path.join(base, "nvidia", "*", "*", "bin", name))
        if hits:
            return hits[0]
    sys.exit(f"{name} not found: set ${env}")


def sass_entries(path, arch):
    """Each entry's disassembly, addresses, encodings and labels dropped."""
    with tempfile.TemporaryDirectory() as d:
        cubin = os.path.join(d, "m.cubin")
        subprocess.run([tool("CONVRS_PTXAS", "ptxas"), f"-arch={arch}", path, "-o", cubin], check=True)
        text = subprocess.run([tool("NVDISASM", "nvdisasm"), "-c", cubin], check=True, capture_output=True, text=True).stdout
    out = {}
    for part in re.split(r"\n//-+ \.text\.", text)[1:]:
        name = part.split(" ", 1)[0]
        code = []
        for line in part.splitlines():
            m = re.match(r"\s*/\*[0-9a-f]+\*/\s*(.*?);", line)
            if m:
                code.append(re.sub(r"\.L_x_\d+", "L", m.group(1).strip()))
        out[name] = "\n".join(code).replace(name, "@ENTRY@")
    return out


def multiset(a, b):
    """How the instructions of `a` and `b` compare as multisets, registers and labels aside."""
    from collections import Counter

    def ops(lines):
        return Counter(re.sub(r"\bU?R\d+\b|\bU?P\d+\b|%[a-z]+#\d+|\$L__BB#\d+|\bL\b|\.reuse", "_", l).strip() for l in lines)

    ca, cb = ops(a), ops(b)
    if ca == cb:
        return "same instructions, reordered"
    more_old = sorted((ca - cb).items(), key=lambda kv: -kv[1])[:3]
    more_new = sorted((cb - ca).items(), key=lambda kv: -kv[1])[:3]
    show = lambda items: ", ".join(f"{n} x `{op}`" for op, n in items) or "nothing"
    return f"old has more {show(more_old)}; new has more {show(more_new)}"


def main():
    args = sys.argv[1:]
    arch = None
    if args[:1] == ["--sass"]:
        arch, args = args[1], args[2:]
    if len(args) < 2:
        print(__doc__)
        return 2
    read = (lambda p: sass_entries(p, arch)) if arch else entries
    old, new = read(args[0]), read(args[1])
    renames = sorted((a.split("=", 1) for a in args[2:]), key=lambda r: -len(r[0]))

    def renamed(name):
        for a, b in renames:
            if name.startswith(a):
                return b + name[len(a):]
        return name

    mapped = {renamed(k): v for k, v in old.items()}
    differ = 0
    for name in sorted(set(mapped) | set(new)):
        if name not in new:
            print(f"only old  {name}")
        elif name not in mapped:
            print(f"only new  {name}")
        elif mapped[name] == new[name]:
            print(f"same      {name}")
        else:
            differ += 1
            a, b = mapped[name].splitlines(), new[name].splitlines()
            first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            print(f"DIFFERENT {name} ({len(a)} -> {len(b)} lines, first at line {first}; {multiset(a, b)})")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
