#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Per translation block profile of rsiw's functions, on their disassembly.

    tests/bench/insn-annotate.py DIR N KO ITERS [FUNC-SUBSTRING...]

DIR is a `make insn-profile PROF_KEEP=1` result folder (PROF_NO_PHASES=1
is enough), N the dump of one run (see DIR/phases), KO the rsiw.ko that ran
(no debug info needed), ITERS the run's iterations. Prints rsiw's functions
by instructions per iteration, then, for each function whose name contains
one of the substrings, its disassembly with every executed block headed by
its executions and instructions per iteration (a `rep` instruction counts
once per repetition, as the plugin sees it). Blocks that ran less than 0.05
times per iteration are left out.
"""
import bisect
import collections
import subprocess
import sys


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    d, n, ko, iters = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    want = sys.argv[5:]
    syms = []
    with open(f"{d}/kallsyms") as f:
        for line in f:
            p = line.split()
            if len(p) >= 3 and p[1] in "tTwW":
                mod = p[3].strip("[]") if len(p) > 3 else ""
                syms.append((int(p[0], 16), p[2], mod))
    syms.sort()
    addrs = [a for a, _, _ in syms]
    # (function, offset of the block) -> executions, instructions
    tbs = collections.defaultdict(lambda: [0, 0])
    with open(f"{d}/dump.{n}") as f:
        for line in f:
            va, ex, ins, *_ = line.split()
            va = int(va, 16)
            i = bisect.bisect_right(addrs, va) - 1
            if i < 0 or syms[i][2] != "rsiw":
                continue
            t = tbs[(syms[i][1], va - addrs[i])]
            t[0] += int(ex)
            t[1] += int(ins)
    start, size = {}, {}
    nm = subprocess.run(["nm", "-S", ko], capture_output=True, text=True, check=True)
    for line in nm.stdout.splitlines():
        p = line.split()
        if len(p) == 4:
            start[p[3]], size[p[3]] = int(p[0], 16), int(p[1], 16)
    funcs = collections.defaultdict(int)
    for (fn, _), t in tbs.items():
        funcs[fn] += t[1]
    print("instructions per iteration, by function:")
    for fn, ins in sorted(funcs.items(), key=lambda x: -x[1]):
        if ins / iters >= 1:
            print(f"{ins / iters:8.1f} {fn}")
    for fn in sorted(funcs, key=lambda f: -funcs[f]):
        if not any(w in fn for w in want) or fn not in start:
            continue
        annotate(fn, start[fn], size[fn], ko, tbs, funcs[fn], iters)


def annotate(fn, base, size, ko, tbs, total, iters):
    print(f"\n==== {fn} ({total / iters:.1f} instructions per iteration)")
    hot = {off: t for (f, off), t in tbs.items() if f == fn}
    out = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", "-r",
         f"--start-address={base:#x}", f"--stop-address={base + size:#x}", ko],
        capture_output=True, text=True, check=True).stdout.splitlines()
    cur = None
    after_branch = True
    for line in out:
        head = line.split(":")[0].strip()
        try:
            off = int(head, 16) - base
            is_insn = "\t" in line
        except ValueError:
            is_insn = False
        if not is_insn:
            # Relocations name the callee of the call above them.
            if cur is not None and cur >= 0.05 and "R_X86" in line:
                print(f"   {line}")
            continue
        if off in hot:
            cur = hot[off][0] / iters
            if cur >= 0.05:
                print(f"---- +{off:#x}: {cur:.2f} executions, "
                      f"{hot[off][1] / iters:.1f} instructions per iteration")
        elif after_branch:
            cur = None
        if cur is not None and cur >= 0.05:
            print(f"   {line}")
        insn = line.split("\t", 1)[1].split() if "\t" in line else []
        m = insn[0] if insn else ""
        after_branch = m.startswith(("j", "call", "ret"))


if __name__ == "__main__":
    main()
