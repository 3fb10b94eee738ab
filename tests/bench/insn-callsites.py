#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Calls per iteration from each call site in rsiw.ko of a kernel function.

    insn-callsites.py DIR [FUNCTION]

DIR is a `PROF_KEEP=1 make insn-profile` result (its kallsyms, phases,
dump.N and the rsiw.ko of the run), FUNCTION the called symbol
(default crc32c). For each run in DIR/phases, prints per iteration the
calls made from the module's call sites of FUNCTION, by calling function:
the executions of the translation blocks that hold the call (a block ends
at a call, so each execution of a block holding it is one call). E.g.
which side of the connection makes the CRC32C calls the profile counts.
"""
import collections
import re
import subprocess
import sys

d = sys.argv[1]
ko = f"{d}/rsiw.ko"
callee = sys.argv[2] if len(sys.argv) > 2 else "crc32c"

# the module's functions where the kernel loaded them
ksym = {}
for line in open(f"{d}/kallsyms"):
    f = line.split()
    if len(f) > 3 and f[3] == "[rsiw]":
        ksym[f[2]] = int(f[0], 16)

# the module's instructions per function, and its calls of `callee`
dis = subprocess.run(["objdump", "-dr", "--no-show-raw-insn", ko],
                     capture_output=True, text=True, check=True).stdout
func, last = None, None
fstart, insns, sites = {}, collections.defaultdict(list), []
for line in dis.splitlines():
    m = re.match(r"^([0-9a-f]+) <(.*)>:$", line)
    if m:
        func = m.group(2)
        fstart[func] = int(m.group(1), 16)
        continue
    m = re.match(r"^\s+[0-9a-f]+: R_X86_64_PLT32\s+(\S+)-0x4$", line)
    if m:
        if func and last and last[2].startswith("call") and m.group(1) == callee:
            sites.append(last)
        continue
    m = re.match(r"^\s+([0-9a-f]+):\s+(\S.*)$", line)
    if m and func:
        last = (func, int(m.group(1), 16), m.group(2))
        insns[func].append(last[1])

for line in open(f"{d}/phases"):
    n, drv, test, size, iters, _ = line.split()
    execs = {}
    for row in open(f"{d}/dump.{n}"):
        va, ex, ins, *_ = row.split()
        execs[int(va, 16)] = (int(ex), int(ins))
    calls = collections.Counter()
    for f, addr, _ in sites:
        if f not in ksym:
            continue
        rt = [a - fstart[f] + ksym[f] for a in insns[f]]
        at = insns[f].index(addr)
        # every block that starts at or before the call and reaches it
        for i in range(at, -1, -1):
            ex, ins = execs.get(rt[i], (0, 0))
            if ex and ins // ex >= at - i + 1:
                calls[f] += ex
    print(f"\n{drv} {test} {size} B: calls of {callee} per iteration, by caller\n")
    for f, c in sorted(calls.items(), key=lambda kv: -kv[1]):
        if c:
            print(f"{c / int(iters):8.2f}  {f}")
