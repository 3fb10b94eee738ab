#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Turn a `make bench` run (results/bench-<date>/) into a table and a chart.

    tests/bench/report.py [RESULTS_DIR]     (default: the newest results/bench-*)

Reads results.tsv and meta.json written by tests/bench/bench.sh in the guest;
prints a Markdown table (medians over the repetitions, each figure for rsiw
and siw, the ratio rsiw/siw, and rsiw throughput / TCP ceiling), writes it to
RESULTS_DIR/table.md, and draws RESULTS_DIR/bw.png (bandwidth against message
size for rsiw, siw and TCP, one panel per MTU).  Host facts (CPU model, QEMU
version) are recorded in RESULTS_DIR/host.json the first time it runs.
"""
import csv
import json
import math
import os
import platform
import statistics
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DRIVERS = ("rsiw", "siw")

BW_TESTS = [("write_bw", "ib_write_bw"), ("read_bw", "ib_read_bw"), ("send_bw", "ib_send_bw")]
LAT_TESTS = [("write_lat", "ib_write_lat"), ("send_lat", "ib_send_lat"), ("read_lat", "ib_read_lat")]


def storage_key(k):
    """True for a results key of the storage section (its tests are
    nvme_*), which has tables of its own."""
    return k[2].startswith("nvme_")


def size_label(s):
    s = int(s)
    if s >= 1 << 20 and s % (1 << 20) == 0:
        return f"{s >> 20} MiB"
    if s >= 1 << 10 and s % (1 << 10) == 0:
        return f"{s >> 10} KiB"
    return f"{s} B"


def host_facts(out):
    path = os.path.join(out, "host.json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        qemu = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True,
                              text=True, timeout=10).stdout.splitlines()[0]
    except Exception:  # noqa: BLE001 - any failure just means "unknown"
        qemu = "unknown"
    facts = {"host_cpu_model": cpu, "host_cpus": os.cpu_count(), "host_kernel": platform.release(),
             "qemu_version": qemu}
    try:
        with open(path, "w") as f:
            json.dump(facts, f, indent=2)
            f.write("\n")
    except OSError:
        pass
    return facts


def load(out):
    rows = []
    with open(os.path.join(out, "results.tsv")) as f:
        for r in csv.DictReader(f, delimiter="\t"):
            rows.append(r)
    meta = {}
    try:
        with open(os.path.join(out, "meta.json")) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        pass
    try:
        with open(os.path.join(out, "clocksource")) as f:
            meta["clocksource"] = f.read().strip()
    except OSError:
        pass
    return rows, meta


class Results:
    def __init__(self, rows, reps):
        self.reps = reps
        self.vals = defaultdict(list)  # (mtu, driver, test, size, metric) -> [float]
        self.seen = defaultdict(int)  # same key -> attempts
        self.crashed = set()  # (mtu, driver)
        self.byrep = defaultdict(lambda: defaultdict(list))  # same key -> {rep: [float]}
        for r in rows:
            if r["status"] == "crash":
                self.crashed.add((r["mtu"], r["driver"]))
                continue
            key = (r["mtu"], r["driver"], r["test"], r["size"], r["metric"])
            self.seen[key] += 1
            if r["status"] == "ok" and r["value"]:
                try:
                    v = float(r["value"])
                except ValueError:
                    continue
                # perftest prints inf when its CPU clock estimate failed;
                # older results.tsv files recorded that as a result.
                if math.isfinite(v) and v > 0:
                    self.vals[key].append(v)
                    self.byrep[key][r["rep"]].append(v)

    def median(self, mtu, drv, test, size, metric):
        v = self.vals.get((mtu, drv, test, str(size), metric))
        return statistics.median(v) if v else None

    def note(self, mtu, drv, test, size, metric):
        """'' when every repetition succeeded, else ' (k/n)'."""
        key = (mtu, drv, test, str(size), metric)
        k = len(self.vals.get(key, []))
        n = max(self.seen.get(key, 0), self.reps)
        return "" if k == n else f" ({k}/{n})"

    def cell(self, mtu, drv, test, size, metric, fmt):
        m = self.median(mtu, drv, test, size, metric)
        if m is None:
            return "crash" if (mtu, drv) in self.crashed else "fail"
        return fmt(m) + self.note(mtu, drv, test, size, metric)


def fmt_g(v):
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    if v >= 0.1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}"


# Two-sided 90% Student t quantiles (0.95) by degrees of freedom.
T95 = [6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812,
       1.796, 1.782, 1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725]


def paired_ci(res, mtu, a, b, test, size, metric):
    """The ratio a/b from the repetitions both drivers completed, each
    repetition's two runs taken as a pair (they ran minutes apart in the
    same boot, so the host's drift mostly cancels; a repetition with
    several runs, as latency has, counts with its median): the geometric
    mean of the per-repetition ratios and its 90% confidence interval
    (Student t on the log ratios), as (g, lo, hi); None with fewer than 2
    pairs."""
    ra = res.byrep.get((mtu, a, test, str(size), metric), {})
    rb = res.byrep.get((mtu, b, test, str(size), metric), {})
    logs = [math.log(statistics.median(ra[k]) / statistics.median(rb[k])) for k in ra if k in rb]
    if len(logs) < 2:
        return None
    m = statistics.mean(logs)
    h = T95[min(len(logs) - 2, len(T95) - 1)] * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(m), math.exp(m - h), math.exp(m + h)


def paired(res, mtu, a, b, test, size, metric):
    """paired_ci as "g [lo-hi]"; "-" with fewer than 2 pairs."""
    p = paired_ci(res, mtu, a, b, test, size, metric)
    return "-" if p is None else f"{p[0]:.2f} [{p[1]:.2f}-{p[2]:.2f}]"


def table(res, meta, host, mtus):
    lines = []
    add = lines.append
    reps = meta.get("reps", res.reps)
    add("# rsiw vs siw: `make bench`")
    add("")
    add(f"- date: {meta.get('date', '?')}, rsiw commit {meta.get('rsiw_commit', '?')}")
    add(f"- guest kernel: {meta.get('guest_kernel', '?')} ({meta.get('guest_kernel_version', '')}), "
        f"{meta.get('guest_cpus', '?')} vCPUs, {int(meta.get('guest_mem_kib', 0)) // 1024} MiB, QEMU TCG")
    add(f"- QEMU: {host.get('qemu_version') or meta.get('qemu_version', '?')}")
    if meta.get("clocksource"):
        add(f"- guest clock source at the end of the run: {meta['clocksource']}")
    add(f"- host CPU: {host.get('host_cpu_model', '?')} ({host.get('host_cpus', '?')} CPUs), "
        f"host kernel {host.get('host_kernel', '?')}")
    add(f"- user space: rdma-core {meta.get('rdma_core', '?')}, perftest {meta.get('perftest', '?')}, "
        f"iperf3 {meta.get('iperf3', '?')}")
    add(f"- method: namespaces rsiw-a/rsiw-b over veth; perftest `{meta.get('perftest_flags', '-R')}`, "
        f"server in ns B; bandwidth and message rate `-D {meta.get('duration_s', '?')} "
        f"-f {meta.get('margin_s', '?')}`; latency `-n {meta.get('lat_iters', '?')}` (typical), "
        f"{meta.get('lat_runs', 1)} runs per repetition; "
        f"message rate `{meta.get('msgrate', '?')}`; iperf3 one stream, `-t {meta.get('duration_s', '?')}`; "
        f"medians of {reps} repetitions, drivers alternating in one boot"
        + ("; **rsiw with MPA CRC32C** (`BENCH_CRC=1`; siw without: its CRC switches are "
           "compile-time constants, off)" if meta.get("crc") else ""))
    if os.path.exists(os.path.join(OUT, "wall_seconds")):
        with open(os.path.join(OUT, "wall_seconds")) as f:
            add(f"- wall time of `make bench`: {int(f.read().strip()) / 60:.1f} min")
    crashed = sorted({d for _, d in res.crashed})
    if crashed:
        add(f"- **crashed the guest**: {', '.join(crashed)} (the run resumed in a new boot without it; "
            f"see console-boot*.log)")
    add("")
    add("`fail`: the test did not produce a result for that driver; `(k/n)`: median of the k of n "
        "repetitions that succeeded. Ratio = rsiw/siw (for latency and CPU cost, lower is better).")
    for mtu in mtus:
        tcp = res.median(mtu, "tcp", "iperf3", "stream", "bw")
        add("")
        add(f"## MTU {mtu}")
        add("")
        add("| test | size | unit | rsiw | siw | rsiw/siw | rsiw/TCP | siw/TCP |")
        add("|---|---|---|---|---|---|---|---|")
        sizes = sorted({int(k[3]) for k in res.seen if k[0] == mtu and k[4] == "bw" and k[2].endswith("_bw")})
        for test, prog in BW_TESTS:
            for s in sizes:
                r = res.median(mtu, "rsiw", test, s, "bw")
                v = res.median(mtu, "siw", test, s, "bw")
                add(f"| {prog} | {size_label(s)} | Gb/s | {res.cell(mtu, 'rsiw', test, s, 'bw', fmt_g)} | "
                    f"{res.cell(mtu, 'siw', test, s, 'bw', fmt_g)} | {ratio(r, v)} | {ratio(r, tcp)} | "
                    f"{ratio(v, tcp)} |")
        lsizes = sorted({int(k[3]) for k in res.seen if k[0] == mtu and k[4] == "lat_typical"})
        for test, prog in LAT_TESTS:
            for s in lsizes:
                r = res.median(mtu, "rsiw", test, s, "lat_typical")
                v = res.median(mtu, "siw", test, s, "lat_typical")
                add(f"| {prog} (typical) | {size_label(s)} | us | "
                    f"{res.cell(mtu, 'rsiw', test, s, 'lat_typical', fmt_g)} | "
                    f"{res.cell(mtu, 'siw', test, s, 'lat_typical', fmt_g)} | {ratio(r, v)} | | |")
        for test, s in sorted({(k[2], k[3]) for k in res.seen if k[0] == mtu and k[4] == "msgrate"}):
            r = res.median(mtu, "rsiw", test, s, "msgrate")
            v = res.median(mtu, "siw", test, s, "msgrate")
            f = lambda m: f"{m:.4f}"  # noqa: E731
            label = meta.get('msgrate', test)
            if "_l" in test:
                label += " -l " + test.rsplit("_l", 1)[1]
            add(f"| msg rate ({label}) | {size_label(s)} | Mpps | "
                f"{res.cell(mtu, 'rsiw', test, s, 'msgrate', f)} | {res.cell(mtu, 'siw', test, s, 'msgrate', f)} | "
                f"{ratio(r, v)} | | |")
        for test, s in sorted({(k[2], k[3]) for k in res.seen if k[0] == mtu and k[4] == "cpu_s_per_GB"}):
            r = res.median(mtu, "rsiw", test, s, "cpu_s_per_GB")
            v = res.median(mtu, "siw", test, s, "cpu_s_per_GB")
            add(f"| CPU cost, ib_{test} | {size_label(s)} | CPU-s/GB | "
                f"{res.cell(mtu, 'rsiw', test, s, 'cpu_s_per_GB', fmt_g)} | "
                f"{res.cell(mtu, 'siw', test, s, 'cpu_s_per_GB', fmt_g)} | {ratio(r, v)} | | |")
        add(f"| TCP ceiling (iperf3, 1 stream) | - | Gb/s | | | | "
            f"{res.cell(mtu, 'tcp', 'iperf3', 'stream', 'bw', fmt_g)} | |")
        for test, s in sorted({(k[2], k[3]) for k in res.seen if k[0] == mtu and k[4] == "cpu_user"}):
            def split(drv, t=test, z=s):
                b = res.median(mtu, drv, t, z, "cpu_util")
                u = res.median(mtu, drv, t, z, "cpu_user")
                return "fail" if b is None or u is None else f"{b:.0f} / {u:.0f}"
            if test == "iperf3":
                add(f"| CPU busy / in user space, iperf3 | - | % of all CPUs | | | | {split('tcp')} | |")
            else:
                add(f"| CPU busy / in user space, ib_{test} | {size_label(s)} | % of all CPUs | "
                    f"{split('rsiw')} | {split('siw')} | | | |")
        # Kernel CPU-seconds per GB: the busy time outside user space (the
        # data path of either driver, or TCP's send and receive paths) per
        # GB moved, from the medians above.
        ncpu = float(meta.get("guest_cpus", 0) or 0)

        def kernel_cost(drv, t, z):
            b = res.median(mtu, drv, t, z, "cpu_util")
            u = res.median(mtu, drv, t, z, "cpu_user")
            g = res.median(mtu, drv, t, z, "bw")
            if None in (b, u, g) or not g or not ncpu:
                return None
            return (b - u) / 100 * ncpu / (g / 8)
        kc = {d: kernel_cost(d, "write_bw", 65536) for d in ("rsiw", "siw")}
        kt = kernel_cost("tcp", "iperf3", "stream")
        if any(v is not None for v in list(kc.values()) + [kt]):
            f = lambda v: "fail" if v is None else fmt_g(v)  # noqa: E731
            add(f"| kernel CPU cost (busy outside user space), ib_write_bw; TCP: iperf3 | 64 KiB | CPU-s/GB | "
                f"{f(kc['rsiw'])} | {f(kc['siw'])} | {ratio(kc['rsiw'], kc['siw'])} | "
                f"{ratio(kc['rsiw'], kt)} (TCP {f(kt)}) | |")
    add("")
    add("Bandwidth chart: `bw.png` (bandwidth against message size; rsiw solid, siw dashed, TCP dotted).")
    return "\n".join(lines) + "\n"


def base_table(res, meta, mtus):
    """rsiw against an earlier build of itself (BENCH_BASE_KO), measured in
    the same boot: every bandwidth, latency, message rate and CPU figure
    of both, and their ratio; '' when the run had no base."""
    if not any(k[1] == "base" for k in res.seen):
        return ""
    name = meta.get("base_name") or "base"
    lines = ["", f"## rsiw against {name} (an earlier rsiw build, same boot)", "",
             "Same matrix, the two modules swapped before each of their runs. "
             "Ratio = rsiw/base: above 1 is better for bandwidth and message rate, "
             "below 1 for latency and CPU cost. The paired column takes each "
             "repetition's two runs as a pair: the geometric mean of their ratios "
             "and its 90% confidence interval; an interval that contains 1 is "
             "no difference the run can tell from the host's noise."]
    metrics = [("bw", "Gb/s", fmt_g, "ib_{}"), ("lat_typical", "us", fmt_g, "ib_{} (typical)"),
               ("msgrate", "Mpps", lambda m: f"{m:.4f}", "msg rate, {}"),
               ("cpu_s_per_GB", "CPU-s/GB", fmt_g, "CPU cost, ib_{}")]
    for mtu in mtus:
        lines += ["", f"### MTU {mtu}", "",
                  f"| test | size | unit | rsiw | {name} | rsiw/{name} | paired [90% CI] |",
                  "|---|---|---|---|---|---|---|"]
        for metric, unit, f, label in metrics:
            keys = sorted({(k[2], int(k[3])) for k in res.seen
                           if k[0] == mtu and k[1] == "base" and k[4] == metric})
            for test, size in keys:
                r = res.median(mtu, "rsiw", test, size, metric)
                b = res.median(mtu, "base", test, size, metric)
                lines.append(f"| {label.format(test)} | {size_label(size)} | {unit} | "
                             f"{res.cell(mtu, 'rsiw', test, size, metric, f)} | "
                             f"{res.cell(mtu, 'base', test, size, metric, f)} | {ratio(r, b)} | "
                             f"{paired(res, mtu, 'rsiw', 'base', test, size, metric)} |")
    return "\n".join(lines) + "\n"


# The storage section (bench.sh and pair_bench.sh, tests/bench/nvme_fio.sh):
# (test, size, metric, label, unit, higher is better)
STORAGE_FIGURES = [
    ("nvme_randread_qd1", 4096, "lat_p50", "4 KiB random read, QD 1: median latency", "us", False),
    ("nvme_randread_qd1", 4096, "lat_p99", "4 KiB random read, QD 1: p99 latency", "us", False),
    ("nvme_randread_qd32", 4096, "iops", "4 KiB random read, QD 32", "IOPS", True),
    ("nvme_seqread", 131072, "MBps", "128 KiB sequential read, QD 16", "MB/s", True),
    ("nvme_seqwrite", 131072, "MBps", "128 KiB sequential write, QD 16", "MB/s", True),
]
STORAGE_CPU_JOBS = [("nvme_randread_qd1", 4096, "4 KiB random read, QD 1"),
                    ("nvme_randread_qd32", 4096, "4 KiB random read, QD 32"),
                    ("nvme_seqread", 131072, "128 KiB sequential read"),
                    ("nvme_seqwrite", 131072, "128 KiB sequential write")]


def storage_table(res, title, intro, cpu_metrics):
    """The storage section's table for each MTU it ran at: every figure on
    nvme-rdma over rsiw and siw and on nvme-tcp ("nvmetcp"), the ratios
    rsiw/nvme-tcp and rsiw/siw of the medians and paired by repetition,
    and whether rsiw meets the goal (at least as good as nvme-tcp: the
    paired interval on the good side of 1; "not met" when it is on the
    bad side, "tie" when it contains 1); when the run had RNBD over rsiw
    ("rnbd"), its figures and RNBD/NVMe-oF on rsiw paired by repetition.
    cpu_metrics: [(metric, label)] of the CPU per I/O rows. '' without
    storage rows."""
    mtus = sorted({k[0] for k in res.seen if k[2].startswith("nvme_")}, key=int)
    if not mtus:
        return ""
    lines = ["", title, "", intro]

    def verdict(p, higher):
        if p is None:
            return "-"
        g, lo, hi = p
        if (lo >= 1) if higher else (hi <= 1):
            return "met"
        if (hi < 1) if higher else (lo > 1):
            return "**not met**"
        return "tie"
    # transports the run had (BENCH_DRIVERS may leave siw out)
    ran = {k[1] for k in res.seen if storage_key(k)} | {d.split("-", 1)[1] for _, d in res.crashed
                                                        if d.startswith("storage-")}
    rnbd = "rnbd" in ran
    units = ("rsiw", "siw", "nvmetcp") + (("rnbd",) if rnbd else ())
    for mtu in mtus:
        lines += ["", f"### Storage, MTU {mtu}", "",
                  "| figure | unit | rsiw | siw | nvme-tcp | rsiw/nvme-tcp | paired [90% CI] | goal | "
                  "rsiw/siw paired [90% CI] |" +
                  (" RNBD on rsiw | RNBD/NVMe-oF on rsiw paired [90% CI] |" if rnbd else ""),
                  "|---|---|---|---|---|---|---|---|---|" + ("---|---|" if rnbd else "")]
        rows = [(t, z, m, lab, u, hb) for t, z, m, lab, u, hb in STORAGE_FIGURES]
        rows += [(t, z, m, f"CPU per I/O{ml}, {lab}", "CPU-us/IO", False)
                 for m, ml in cpu_metrics for t, z, lab in STORAGE_CPU_JOBS]
        for test, size, metric, label, unit, higher in rows:
            if not any(k[0] == mtu and k[2] == test and k[4] == metric for k in res.seen):
                continue
            med = {d: res.median(mtu, d, test, size, metric) for d in units}
            cell = {d: ("crash" if (mtu, "storage-" + d) in res.crashed and med[d] is None
                        else res.cell(mtu, d, test, size, metric, fmt_g) if d in ran
                        else "-") for d in med}
            lines.append(f"| {label} | {unit} | {cell['rsiw']} | {cell['siw']} | {cell['nvmetcp']} | "
                         f"{ratio(med['rsiw'], med['nvmetcp'])} | "
                         f"{paired(res, mtu, 'rsiw', 'nvmetcp', test, size, metric)} | "
                         f"{verdict(paired_ci(res, mtu, 'rsiw', 'nvmetcp', test, size, metric), higher)} | "
                         f"{paired(res, mtu, 'rsiw', 'siw', test, size, metric)} |" +
                         (f" {cell['rnbd']} | {paired(res, mtu, 'rnbd', 'rsiw', test, size, metric)} |"
                          if rnbd else ""))
        counts = sorted({k[4] for k in res.seen if k[0] == mtu and k[2].startswith("nvme_")
                         and k[4].split("_per_io")[0] in COUNT_LABELS and "_per_io" in k[4]},
                        key=lambda m: list(COUNT_LABELS).index(m.split("_per_io")[0]))
        if counts:
            lines += ["", "What each I/O took (medians; over the whole fio run, TCP segments both ways; "
                      "rsiw's device counters summed over its links in the guest" +
                      (", guest a" if any(m.endswith("_a") for m in counts) else "") + "):", "",
                      "| job | per I/O | rsiw | siw | nvme-tcp |" + (" RNBD on rsiw |" if rnbd else ""),
                      "|---|---|---|---|---|" + ("---|" if rnbd else "")]
            for test, size, label in STORAGE_CPU_JOBS:
                for m in counts:
                    if not any(k[0] == mtu and k[2] == test and k[4] == m for k in res.seen):
                        continue
                    c = {d: res.median(mtu, d, test, size, m) for d in units}
                    f = lambda v: "" if v is None else fmt_g(v)  # noqa: E731
                    lines.append(f"| {label} | {COUNT_LABELS[m.split('_per_io')[0]]} | {f(c['rsiw'])} | "
                                 f"{f(c['siw'])} | {f(c['nvmetcp'])} |" + (f" {f(c['rnbd'])} |" if rnbd else ""))
    return "\n".join(lines) + "\n"


# the per-I/O counts of the storage section (tests/bench/nvme_fio.sh)
COUNT_LABELS = {"tcp_segs": "TCP segments", "ctxt": "context switches",
                "tx_messages": "rsiw messages sent", "tx_fpdus": "rsiw FPDUs sent",
                "tx_tcp_sends": "rsiw TCP send calls", "tx_work_runs": "rsiw transmit workqueue runs",
                "tx_post_runs": "rsiw transmit runs in a kernel post", "rx_upcalls": "rsiw receive upcalls"}


STORAGE_INTRO = (
    "NVMe-oF on a null_blk namespace (no memory: the target's device costs nothing per I/O), fio with "
    "libaio and O_DIRECT (tests/bench/nvme_fio.sh): over nvme-rdma on rsiw and on siw, and over nvme-tcp "
    "on the same addresses; transports alternating by repetition in one boot. Latency: fio's total "
    "latency (submission to completion). Ratio = rsiw/nvme-tcp: the goal is rsiw at least as fast as "
    "nvme-tcp on every figure (for latency and CPU, lower is better); paired: each repetition's runs "
    "as a pair, the geometric mean of their ratios and its 90% confidence interval. RNBD on rsiw (when "
    "the run had it): rnbd-client and rnbd-server over RTRS on the same rsiw devices, null_blk and fio "
    "jobs, run right after NVMe-oF on rsiw; its ratio is RNBD/NVMe-oF, paired the same way.")


def pair_table(out):
    """The two-guest section (tests/bench/pair_bench.sh's pair/results.tsv):
    rsiw against siw and TCP across virtio-net; '' without it."""
    path = os.path.join(out, "pair")
    if not os.path.exists(os.path.join(path, "results.tsv")):
        return ""
    rows, _ = load(path)
    res = Results(rows, max([int(r["rep"]) for r in rows if r["rep"].isdigit()] or [1]))
    mtus = sorted({k[0] for k in res.seen if not storage_key(k)}, key=int)
    lines = ["", "## Two guests (virtio-net between two QEMU guests, one vCPU each)", "",
             "tests/bench/pair_bench.sh: both guests run the same driver, the client in guest a. "
             "TCP's ceiling is the better of iperf3 and iperf3 -Z (one stream); its latency floor is "
             "qperf's tcp_lat of 64 B. CPU cost: CPU-seconds per GB in each guest (`a` sends, `b` "
             "receives), sampled in the middle of the run: outside user space (the driver's or TCP's "
             "work), and all of it (perftest polls its CQ in user space all the time)."]
    for mtu in mtus:
        tcp = [res.median(mtu, "tcp", t, "stream", "bw") for t in ("iperf3", "iperf3_z")]
        tcp = max([t for t in tcp if t is not None], default=None)
        add = lines.append
        add("")
        add(f"### MTU {mtu}")
        add("")
        add("| test | size | unit | rsiw | siw | rsiw/siw | rsiw/TCP | siw/TCP |")
        add("|---|---|---|---|---|---|---|---|")
        sizes = sorted({int(k[3]) for k in res.seen if k[0] == mtu and k[4] == "bw" and k[1] != "tcp"})
        for test, prog in BW_TESTS:
            for z in sizes:
                r = res.median(mtu, "rsiw", test, z, "bw")
                v = res.median(mtu, "siw", test, z, "bw")
                add(f"| {prog} | {size_label(z)} | Gb/s | {res.cell(mtu, 'rsiw', test, z, 'bw', fmt_g)} | "
                    f"{res.cell(mtu, 'siw', test, z, 'bw', fmt_g)} | {ratio(r, v)} | {ratio(r, tcp)} | "
                    f"{ratio(v, tcp)} |")
        floor = res.median(mtu, "tcp", "qperf_tcp_lat", 64, "lat")
        for test, prog in LAT_TESTS:
            if not any(k[0] == mtu and k[2] == test for k in res.seen):
                continue
            r = res.median(mtu, "rsiw", test, 64, "lat_typical")
            v = res.median(mtu, "siw", test, 64, "lat_typical")
            add(f"| {prog} (typical) | 64 B | us | {res.cell(mtu, 'rsiw', test, 64, 'lat_typical', fmt_g)} | "
                f"{res.cell(mtu, 'siw', test, 64, 'lat_typical', fmt_g)} | {ratio(r, v)} | "
                f"{ratio(r, floor)} | {ratio(v, floor)} |")
        for m, what in (("kcpu", "kernel CPU"), ("cpu", "CPU, all")):
            for side in ("a", "b"):
                k = f"{m}_{side}"
                r = res.median(mtu, "rsiw", "write_bw", 65536, k)
                v = res.median(mtu, "siw", "write_bw", 65536, k)
                t = [res.median(mtu, "tcp", x, "stream", k) for x in ("iperf3", "iperf3_z")]
                tl = " / ".join("fail" if x is None else fmt_g(x) for x in t)
                add(f"| {what} in guest {side}, ib_write_bw; TCP: iperf3 / -Z | 64 KiB | CPU-s/GB | "
                    f"{res.cell(mtu, 'rsiw', 'write_bw', 65536, k, fmt_g)} | "
                    f"{res.cell(mtu, 'siw', 'write_bw', 65536, k, fmt_g)} | {ratio(r, v)} | "
                    f"TCP {tl} | |")
        add(f"| TCP: iperf3 / iperf3 -Z | - | Gb/s | | | | "
            f"{res.cell(mtu, 'tcp', 'iperf3', 'stream', 'bw', fmt_g)} / "
            f"{res.cell(mtu, 'tcp', 'iperf3_z', 'stream', 'bw', fmt_g)} | |")
        add(f"| TCP ping-pong floor (qperf tcp_lat) | 64 B | us | | | | "
            f"{res.cell(mtu, 'tcp', 'qperf_tcp_lat', 64, 'lat', fmt_g)} | |")
    st = storage_table(res, "### Storage: NVMe-oF over rsiw against NVMe/TCP (two guests)",
                       STORAGE_INTRO + " Two guests: the target in guest b, the host (fio) in guest a; "
                       "CPU per I/O in each guest (host: a, target: b), sampled in the middle of each job.",
                       [("cpu_us_per_io_a", " (host, a)"), ("cpu_us_per_io_b", " (target, b)")])
    return "\n".join(lines) + "\n" + st.replace("\n### Storage, MTU", "\n#### Storage, MTU")


def chart(res, mtus, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: matplotlib missing (Debian python3-matplotlib); no chart", file=sys.stderr)
        return False
    fig, axes = plt.subplots(1, len(mtus), figsize=(6.5 * len(mtus), 4.8), squeeze=False)
    colors = {"write_bw": "tab:blue", "read_bw": "tab:green", "send_bw": "tab:orange"}
    for ax, mtu in zip(axes[0], mtus):
        sizes = sorted({int(k[3]) for k in res.seen if k[0] == mtu and k[4] == "bw" and k[2].endswith("_bw")})
        for drv, style in (("rsiw", "-"), ("siw", "--")):
            for test, prog in BW_TESTS:
                pts = [(s, res.median(mtu, drv, test, s, "bw")) for s in sizes]
                pts = [(s, v) for s, v in pts if v is not None]
                label = f"{drv} {prog}"
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o",
                            color=colors[test], label=label, linewidth=2 if drv == "rsiw" else 1.3)
                else:
                    ax.plot([], [], style, color=colors[test], label=f"{label}: no result")
        tcp = res.median(mtu, "tcp", "iperf3", "stream", "bw")
        if tcp is not None and sizes:
            ax.axhline(tcp, color="black", linestyle=":", label=f"TCP iperf3 ({tcp:.2f} Gb/s)")
        ax.set_xscale("log", base=2)
        if sizes:
            ax.set_xticks(sizes)
            ax.set_xticklabels([size_label(s) for s in sizes])
        ax.set_ylim(bottom=0)
        ax.set_xlabel("message size")
        ax.set_ylabel("Gb/s (median)")
        ax.set_title(f"MTU {mtu}: bandwidth vs message size")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    fig.suptitle("rsiw vs upstream siw (perftest -R, netns veth, QEMU TCG)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main():
    global OUT
    if len(sys.argv) > 1:
        OUT = os.path.abspath(sys.argv[1])
    else:
        base = os.path.join(ROOT, "results")
        runs = sorted(d for d in os.listdir(base) if d.startswith("bench-")) if os.path.isdir(base) else []
        if not runs:
            sys.exit("report: no results/bench-* directory")
        OUT = os.path.join(base, runs[-1])
    if not os.path.exists(os.path.join(OUT, "results.tsv")):
        sys.exit(f"report: {OUT}/results.tsv missing (did the guest run?)")
    rows, meta = load(OUT)
    host = host_facts(OUT)
    res = Results(rows, int(meta.get("reps", 1)))
    mtus = [m for m in str(meta.get("mtus", "")).split()
            if any(k[0] == m and not storage_key(k) for k in res.seen)]
    if not mtus:
        mtus = sorted({k[0] for k in res.seen if not storage_key(k)}, key=int)
    md = table(res, meta, host, mtus) + base_table(res, meta, mtus)
    md += storage_table(res, "## Storage: NVMe-oF over rsiw against NVMe/TCP (one guest)",
                        STORAGE_INTRO + " One guest: target and host in the initial network namespace "
                        "(nvmet-rdma and nvme-rdma create their rdma_cm ids there only), on a veth pair "
                        "whose traffic policy routes keep on the veth; CPU per I/O: the whole guest's "
                        f"busy time ({meta.get('guest_cpus', '?')} vCPUs, kernel and user) over each "
                        "job's measured window, over its I/O count.",
                        [("cpu_us_per_io", "")])
    md += pair_table(OUT)
    pair = os.path.join(OUT, "pair", "table.md")
    if os.path.exists(pair):
        # latpair.sh's own table, under a heading of this report
        with open(pair) as f:
            lines = f.read().splitlines()
        md += "\n## Both drivers in one process pair (latpair)\n\n"
        md += "\n".join(l for l in lines if not l.startswith("# ")).strip() + "\n"
    with open(os.path.join(OUT, "table.md"), "w") as f:
        f.write(md)
    print(md)
    if mtus and chart(res, mtus, os.path.join(OUT, "bw.png")):
        print(f"report: {os.path.relpath(OUT, ROOT)}/table.md and bw.png")


OUT = ""
if __name__ == "__main__":
    main()
