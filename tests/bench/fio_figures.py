#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The figures of one fio job, from fio's JSON output (stdin).

Prints "IOPS P50_US P99_US MB_PER_S IOS" for the job's direction (the first of
read and write that did I/O): the I/O rate, the median and 99th percentile
of the total latency (fio's --lat_percentiles=1 --percentile_list=50:99;
submission to completion) in microseconds, the data rate in 10^6 bytes
per second, and the number of I/Os measured (after the ramp). Prints nothing (and exits 1) when the output has no
result, as when fio failed.
"""
import json
import sys


def main():
    text = sys.stdin.read()
    # fio may print notes before its JSON
    try:
        d = json.loads(text[text.index("{"):])
        job = d["jobs"][0]
    except (ValueError, KeyError, IndexError):
        sys.exit(1)
    for way in ("read", "write"):
        r = job.get(way, {})
        if r.get("total_ios", 0) > 0:
            pct = r.get("lat_ns", {}).get("percentile") or r.get("clat_ns", {}).get("percentile") or {}
            p50 = pct.get("50.000000")
            p99 = pct.get("99.000000")
            f = lambda v: "-" if v is None else f"{v / 1000:.1f}"  # noqa: E731
            print(f"{r['iops']:.1f} {f(p50)} {f(p99)} {r['bw_bytes'] / 1e6:.2f} {r['total_ios']}")
            return
    sys.exit(1)


if __name__ == "__main__":
    main()
