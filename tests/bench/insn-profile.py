#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Per-message guest kernel cost of rsiw and siw from a tbprof run.

Reads DIR/phases, DIR/kallsyms and DIR/dump.N (tests/bench/insn-profile.sh)
and prints, per test, the kernel instructions, memory accesses and atomic
instructions per iteration (one ping-pong round trip: both sides' send and
receive) for each driver, then the functions that make the difference.
With "rsiw" and "rsiw-crc" runs (PROF_CRC=1), also the cost of MPA CRC32C
per payload octet, by direction.
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


# per function: entries (executions of the block at its start), then the
# dump's counts: instructions, memory accesses, atomics, interrupt flag
# changes, fences
NV = 6


class Per(collections.defaultdict):
    """A defaultdict that can carry the per-phase table along."""


PHASES = {
    0: "kernel entry, interrupts, up to the doorbell",
    1: "doorbell: ib_uverbs_write to tcp_sendmsg_locked",
    2: "TCP, veth, the peer's TCP up to tcp_read_sock",
    3: "the peer's receive: tcp_read_sock to tcp_rcv_space_adjust",
    4: "after the receive: the rest of both system calls",
}


def load(n):
    """Per function totals, and per (phase, function) when the run had
    phase markers (an eighth column)."""
    per = Per(lambda: [0] * NV)
    perph = collections.defaultdict(lambda: [0] * NV)
    for line in open(f"{d}/dump.{n}"):
        va, ex, *counts = line.split()
        va = int(va, 16)
        s = sym(va)
        ph = int(counts[NV - 1]) if len(counts) >= NV else None
        i = bisect.bisect_right(addrs, va) - 1
        for e in (per[s],) + ((perph[(ph, s)],) if ph is not None else ()):
            if i >= 0 and addrs[i] == va:
                e[0] += int(ex)
            for k, c in enumerate(counts[: NV - 1]):
                e[k + 1] += int(c)
    per.phases = perph
    return per




runs = collections.defaultdict(dict)
for line in open(f"{d}/phases"):
    n, drv, test, size, iters, typ = line.split()
    runs[(test, size)][drv] = (load(int(n)), int(iters), typ)

# Where a function's instructions go when CRC is on: the transmit side
# (framing and the CRC of what is sent), the receive side (the verify-first
# pass over the socket's queue, the deframers, placement), the kernel's
# CRC32C itself (both sides, the same octets: split evenly), the rest
# (TCP, scheduling).
# (the kernel's CRC32C: 6.12's crc32c() goes through the crypto API to
# crc32c-intel, which saves the FPU state for its PCLMULQDQ version)
CRC_FUNCS = ("crc32c", "crc_pcl", "crc32c_pcl_intel", "crc32c_intel", "crypto_shash_update",
             "chksum_update", "crc32c_le", "__crc32c", "shash_", "crc32c_combine",
             "kernel_fpu_begin", "kernel_fpu_end", "irq_fpu_usable", "save_fpregs_to_fpstate",
             "restore_fpregs_from_fpstate", "fpregs_restore_userregs", "switch_fpu_return")
TX_KEYS = ("2qp2tx", "emit", "rsiw_sock_send")
RX_KEYS = ("2qp2rx", "wire2rx", "rsiw_sk_peek", "rsiw_rx_", "rsiw_sock_rx", "rsiw_sk_read",
           "MemRef5write", "mem6access")


def side(s):
    name = s.split("[")[0]
    if any(name.startswith(k) or k in name for k in CRC_FUNCS) and not s.endswith("[rsiw]"):
        return "crc"
    if s.endswith("[rsiw]"):
        if any(k in s for k in TX_KEYS):
            return "tx"
        if any(k in s for k in RX_KEYS):
            return "rx"
        return "module, other"
    return "kernel, other"


def crc_cost(test, size, off, on, top):
    """The instructions CRC adds per payload octet and direction."""
    (pa, ia, _), (pb, ib, _) = off, on
    octets = 2 * int(size)  # per round trip, each way: one message per side
    names = set(pa) | set(pb)
    delta = {s: pb.get(s, [0] * NV)[1] / ib - pa.get(s, [0] * NV)[1] / ia for s in names}
    print(f"\n## {test} {size} B: MPA CRC, cost per payload octet\n")
    print(f"Per round trip {octets} payload octets go each way (one message per side).\n")
    print("| part | CRC off | CRC on | on - off | per octet |")
    print("| --- | --- | --- | --- | --- |")
    for part, pred in (
        ("whole kernel", lambda s: True),
        ("the module", lambda s: s.endswith("[rsiw]")),
    ):
        a = sum(v[1] for k, v in pa.items() if pred(k)) / ia
        b = sum(v[1] for k, v in pb.items() if pred(k)) / ib
        print(f"| {part} | {a:.0f} | {b:.0f} | {b - a:+.0f} | {(b - a) / octets:+.3f} |")
    by_side = collections.Counter()
    for s, d in delta.items():
        by_side[side(s)] += d
    print("\nthe difference by side (the kernel's CRC32C split evenly: both sides"
          " compute it over the same octets, but not in as many calls, so the"
          " split is approximate; docs/performance.md has a measured one):\n")
    print("| side | on - off per round trip | per octet |")
    print("| --- | --- | --- |")
    half = by_side["crc"] / 2
    for what, d in (
        ("transmit: the module's framing and CRC calls", by_side["tx"]),
        ("receive: the module's verify pass, deframers, placement", by_side["rx"]),
        ("the kernel's CRC32C and its FPU use (both sides)", by_side["crc"]),
        ("the module, elsewhere", by_side["module, other"]),
        ("the kernel, elsewhere (TCP, scheduling)", by_side["kernel, other"]),
        ("**transmit** (its part + half the CRC32C)", by_side["tx"] + half),
        ("**receive** (its part + half the CRC32C)", by_side["rx"] + half),
    ):
        print(f"| {what} | {d:+.0f} | {d / octets:+.3f} |")
    print(f"\nfunctions by |on - off| per round trip (top {top}):\n")
    print("| function | side | calls off | calls on | insns off | insns on | on - off |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for s in sorted(names, key=lambda s: -abs(delta[s]))[:top]:
        a, b = pa.get(s, [0] * NV), pb.get(s, [0] * NV)
        print(f"| {s} | {side(s)} | {a[0] / ia:.2f} | {b[0] / ib:.2f} | {a[1] / ia:.0f}"
              f" | {b[1] / ib:.0f} | {delta[s]:+.0f} |")


for (test, size), by in runs.items():
    print(f"\n## {test} {size} B: guest kernel, per iteration (round trip)\n")
    print("| driver | instructions | memory accesses | atomics | CLI/STI/POPF | fences | typical us (plugin on) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for drv, (per, iters, typ) in sorted(by.items()):
        t = [sum(v[k] for v in per.values()) / iters for k in range(NV)]
        print(f"| {drv} | {t[1]:.0f} | {t[2]:.0f} | {t[3]:.1f} | {t[4]:.1f} | {t[5]:.1f} | {typ} |")
    if "rsiw" in by and "rsiw-crc" in by:
        crc_cost(test, size, by["rsiw"], by["rsiw-crc"], top)
    if "rsiw" not in by or "siw" not in by:
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
        a, b = pa.get(s, [0] * NV), pb.get(s, [0] * NV)
        return [x / ia for x in a], [x / ib for x in b]

    diff = sorted(names, key=lambda s: -abs(row(s)[0][1] - row(s)[1][1]))
    print(f"\nfunctions by |instructions rsiw - siw| per iteration (top {top}):\n")
    print("| function | rsiw calls | insns | atomics | irqf | siw calls | insns | atomics | irqf |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for s in diff[:top]:
        a, b = row(s)
        print(
            f"| {s} | {a[0]:.2f} | {a[1]:.0f} | {a[3]:.1f} | {a[4]:.1f}"
            f" | {b[0]:.2f} | {b[1]:.0f} | {b[3]:.1f} | {b[4]:.1f} |"
        )
    # the dear operations, function by function, where the drivers differ
    for k, what in ((3, "atomics"), (4, "interrupt flag changes"), (5, "fences")):
        rows = [(s, *row(s)) for s in names]
        rows = [r for r in rows if abs(r[1][k] - r[2][k]) >= 0.5]
        if not rows:
            continue
        print(f"\nfunctions whose {what} per iteration differ:\n")
        print("| function | rsiw | siw |")
        print("| --- | --- | --- |")
        for s, a, b in sorted(rows, key=lambda r: -abs(r[1][k] - r[2][k]))[:top]:
            print(f"| {s} | {a[k]:.1f} | {b[k]:.1f} |")

    if not any(p.phases for p, _, _ in by.values()):
        continue
    print("\nby phase of a one-way message (instructions / memory accesses per iteration;"
          " phases 1-3 are the critical path of a ping-pong on veth):\n")
    print("| phase | rsiw | siw | rsiw - siw (instructions) |")
    print("| --- | --- | --- | --- |")
    for ph, what in PHASES.items():
        cells, ins = [], []
        for drv in ("rsiw", "siw"):
            per, iters, _ = by[drv]
            i = sum(v[1] for (p, _), v in per.phases.items() if p == ph) / iters
            m = sum(v[2] for (p, _), v in per.phases.items() if p == ph) / iters
            cells.append(f"{i:.0f} / {m:.0f}")
            ins.append(i)
        print(f"| {ph}: {what} | {cells[0]} | {cells[1]} | {ins[0] - ins[1]:+.0f} |")
    for ph in (1, 2, 3):
        qa = {s: v for (p, s), v in pa.phases.items() if p == ph}
        qb = {s: v for (p, s), v in pb.phases.items() if p == ph}
        names = set(qa) | set(qb)

        def prow(s):
            a, b = qa.get(s, [0] * NV), qb.get(s, [0] * NV)
            return [x / ia for x in a], [x / ib for x in b]

        print(f"\nphase {ph}, functions by |instructions rsiw - siw| per iteration (top {top}):\n")
        print("| function | rsiw calls | insns | mems | siw calls | insns | mems |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for s in sorted(names, key=lambda s: -abs(prow(s)[0][1] - prow(s)[1][1]))[:top]:
            a, b = prow(s)
            print(f"| {s} | {a[0]:.2f} | {a[1]:.0f} | {a[2]:.0f} | {b[0]:.2f} | {b[1]:.0f} | {b[2]:.0f} |")

# Bandwidth runs (perftest *_bw, iperf3): per KiB moved, both sides of
# the one-guest veth path together, against TCP itself.
bw = [(test, size, drv, v) for (test, size), by in runs.items() for drv, v in by.items()
      if test.endswith("_bw") or test.startswith("iperf3")]
if bw:
    def is_mod(s):
        return s.endswith("[rsiw]") or s.endswith("[siw]")

    def kib(size, iters):
        return int(size) * iters / 1024

    print("\n## Bandwidth runs: guest kernel per KiB moved (both sides)\n")
    print("| test | size | driver | Gb/s (plugin on) | instructions | of it the module | memory accesses | atomics |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for test, size, drv, (per, iters, typ) in bw:
        k = kib(size, iters)
        ins = sum(v[1] for v in per.values()) / k
        mod = sum(v[1] for s, v in per.items() if is_mod(s)) / k
        mem = sum(v[2] for v in per.values()) / k
        ato = sum(v[3] for v in per.values()) / k
        print(f"| {test} | {size} | {drv} | {typ} | {ins:.0f} | {mod:.0f} | {mem:.0f} | {ato:.2f} |")
    tcp = [(t, s, v) for t, s, d, v in bw if d == "tcp"]
    if tcp:
        t0, s0, (pt, it, _) = min(tcp, key=lambda r: sum(x[1] for x in r[2][0].values()) / kib(r[1], r[2][1]))
        kt = kib(s0, it)
        for test, size, drv, (per, iters, _) in bw:
            if drv != "rsiw":
                continue
            k = kib(size, iters)
            names = set(per) | set(pt)
            d = {s: (per.get(s, [0] * NV)[1] / k, pt.get(s, [0] * NV)[1] / kt) for s in names}
            print(f"\nfunctions by |instructions per KiB|, rsiw {test} {size} B against {t0} (top {top}):\n")
            print("| function | rsiw | TCP | rsiw - TCP |")
            print("| --- | --- | --- | --- |")
            for s in sorted(names, key=lambda s: -abs(d[s][0] - d[s][1]))[:top]:
                a, b = d[s]
                print(f"| {s} | {a:.1f} | {b:.1f} | {a - b:+.1f} |")
