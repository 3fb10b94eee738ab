#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Per-message guest kernel cost of rsiw and siw from a tbprof run.

Reads DIR/phases, DIR/kallsyms and DIR/dump.N (tests/bench/insn-profile.sh)
and prints, per test, the kernel instructions, memory accesses and atomic
instructions per iteration (one ping-pong round trip: both sides' send and
receive) for each driver, then the functions that make the difference.
"""
import bisect
import collections
import sys

d = sys.argv[1]
top = int(sys.argv[2]) if len(sys.argv) > 2 else 30

syms = []
for line in open(f"{d}/kallsyms"):
    f = line.split()
    if len(f) >= 3 and f[1] in "tTwW":
        mod = f[3].strip("[]") if len(f) > 3 else ""
        syms.append((int(f[0], 16), f[2] + (f"[{mod}]" if mod else "")))
syms.sort()
addrs = [a for a, _ in syms]


def sym(va):
    i = bisect.bisect_right(addrs, va) - 1
    return syms[i][1] if i >= 0 else hex(va)


def load(n):
    per = collections.defaultdict(lambda: [0, 0, 0, 0])
    for line in open(f"{d}/dump.{n}"):
        va, ex, ins, mem, lk = line.split()
        va = int(va, 16)
        s = sym(va)
        e = per[s]
        i = bisect.bisect_right(addrs, va) - 1
        if i >= 0 and addrs[i] == va:
            e[0] += int(ex)  # entries: blocks starting at the symbol
        e[1] += int(ins)
        e[2] += int(mem)
        e[3] += int(lk)
    return per


runs = collections.defaultdict(dict)
for line in open(f"{d}/phases"):
    n, drv, test, size, iters, typ = line.split()
    runs[(test, size)][drv] = (load(int(n)), int(iters), typ)

for (test, size), by in runs.items():
    print(f"\n## {test} {size} B: guest kernel, per iteration (round trip)\n")
    print("| driver | instructions | memory accesses | atomics | typical us (plugin on) |")
    print("| --- | --- | --- | --- | --- |")
    tot = {}
    for drv, (per, iters, typ) in sorted(by.items()):
        t = [sum(v[k] for v in per.values()) / iters for k in range(4)]
        tot[drv] = t
        print(f"| {drv} | {t[1]:.0f} | {t[2]:.0f} | {t[3]:.1f} | {typ} |")
    if len(by) < 2:
        continue
    print("\nsplit (instructions / memory accesses per iteration):\n")
    print("| part | rsiw | siw |")
    print("| --- | --- | --- |")
    for part, pred in (
        ("the driver module", lambda s: s.endswith("[rsiw]") or s.endswith("[siw]")),
        ("the rest of the kernel", lambda s: not (s.endswith("[rsiw]") or s.endswith("[siw]"))),
    ):
        cells = []
        for drv in ("rsiw", "siw"):
            per, iters, _ = by[drv]
            ins = sum(v[1] for k, v in per.items() if pred(k)) / iters
            mem = sum(v[2] for k, v in per.items() if pred(k)) / iters
            cells.append(f"{ins:.0f} / {mem:.0f}")
        print(f"| {part} | {cells[0]} | {cells[1]} |")
    (pa, ia, _), (pb, ib, _) = by["rsiw"], by["siw"]
    names = set(pa) | set(pb)

    def row(s):
        a, b = pa.get(s, [0] * 4), pb.get(s, [0] * 4)
        return [x / ia for x in a], [x / ib for x in b]

    diff = sorted(names, key=lambda s: -abs(row(s)[0][1] - row(s)[1][1]))
    print(f"\nfunctions by |instructions rsiw - siw| per iteration (top {top}):\n")
    print("| function | rsiw calls | rsiw insns | rsiw atomics | siw calls | siw insns | siw atomics |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for s in diff[:top]:
        a, b = row(s)
        print(f"| {s} | {a[0]:.2f} | {a[1]:.0f} | {a[3]:.1f} | {b[0]:.2f} | {b[1]:.0f} | {b[3]:.1f} |")
