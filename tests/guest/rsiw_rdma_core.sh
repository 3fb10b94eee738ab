#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rdma-core's own test suite (Debian python3-pyverbs; the tests ship gzipped
# under /usr/share/doc/rdma-core/tests) against upstream siw and rsiw in the
# same boot: per-test outcomes for both, one KTAP line per device, and
# "rsiw passes every test siw passes" listing the differences.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
SRC=/usr/share/doc/rdma-core/tests
WORK=/tmp/rsiw-rdma-core
SUITE_TIMEOUT=${SUITE_TIMEOUT:-600}

ktap_print_header
[ -d "$SRC" ] || { ktap_skip_all "rdma-core tests not installed ($SRC)"; exit "$KSFT_SKIP"; }
ktap_set_plan 5

# Same as the suite's run_tests.py (parse --dev/--port/--gid, unittest.main
# on the tests package, verbose), plus a JSON file of per-test outcomes.
# The suite draws random QP/CQ/MR sizes (and skips a test when the device
# refuses them), so both runs use the same seed: same draws, same order.
RUNNER='
import json, os, random, sys, unittest
random.seed(int(os.environ.get("RSIW_SUITE_SEED", "1")))
from importlib.machinery import SourceFileLoader
sys.path.insert(0, os.path.join(os.getcwd(), "tests"))
out = sys.argv.pop(1)
from args_parser import parser
tests = SourceFileLoader("tests", "tests/__init__.py").load_module()
parser.parse_args()
res, why = {}, {}
class R(unittest.TextTestResult):
    def addSuccess(self, t): super().addSuccess(t); res[t.id()] = "ok"
    def addError(self, t, e):
        super().addError(t, e); res[t.id()] = "ERROR"; why[t.id()] = str(e[1])[:200]
    def addFailure(self, t, e):
        super().addFailure(t, e); res[t.id()] = "FAIL"; why[t.id()] = str(e[1])[:200]
    def addSkip(self, t, r):
        super().addSkip(t, r); res[t.id()] = "skip"; why[t.id()] = str(r)[:200]
    def addExpectedFailure(self, t, e): super().addExpectedFailure(t, e); res[t.id()] = "xfail"
    def addUnexpectedSuccess(self, t): super().addUnexpectedSuccess(t); res[t.id()] = "xpass"
    def addSubTest(self, t, st, e):
        super().addSubTest(t, st, e)
        if e is not None: res[t.id()] = "FAIL"
    def stopTestRun(self):
        super().stopTestRun()
        json.dump({"res": res, "why": why}, open(out, "w"), indent=0, sort_keys=True)
unittest.main(module=tests, exit=False,
              testRunner=unittest.TextTestRunner(resultclass=R, verbosity=2))
'

t_setup() {
	topo_up && load_rsiw && load_siw &&
		add_dev "$NS_A" rsiw0 rsiw va && add_dev "$NS_B" siw0 siw vb &&
		rm -rf "$WORK" && mkdir -p "$WORK" && cp -r "$SRC" "$WORK/" &&
		gunzip -f "$WORK"/tests/*.gz
}

# t_suite DEV: runs the suite; passes if it ran to the end (its summary
# line) with results for every test; prints the counts.
t_suite() {
	local dev=$1 rc
	(cd "$WORK" && timeout -k 10 "$SUITE_TIMEOUT" $PY -c "$RUNNER" "$WORK/$dev.json" \
		--dev "$dev" --port 1 --gid 0 -v >"$WORK/$dev.log" 2>&1)
	rc=$?
	grep -E '^(Ran [0-9]+ tests|OK|FAILED)' "$WORK/$dev.log"
	[ $rc = 124 ] && { echo "$dev: suite timed out after ${SUITE_TIMEOUT}s"; tail -5 "$WORK/$dev.log"; return 1; }
	[ -s "$WORK/$dev.json" ] || { echo "$dev: no results"; tail -20 "$WORK/$dev.log"; return 1; }
	$PY - "$WORK/$dev.json" >"$WORK/$dev.summary" <<'PY'
import collections, json, sys
r = json.load(open(sys.argv[1]))["res"]
c = collections.Counter(r.values())
print("%d tests: %s" % (len(r), ", ".join("%s %d" % kv for kv in sorted(c.items()))))
PY
	cat "$WORK/$dev.summary"
	grep -q '^Ran [0-9]* tests' "$WORK/$dev.log"
}

# Per-test outcomes for both devices (every test not skipped on both),
# then the differences; fails if rsiw0 does not pass a test siw0 passes.
t_compare() {
	$PY - "$WORK/siw0.json" "$WORK/rsiw0.json" <<'PY'
import json, sys
def load(p):
    try:
        d = json.load(open(p))
        return d["res"], d["why"]
    except OSError:
        return {}, {}
siw, _ = load(sys.argv[1])
rsiw, rwhy = load(sys.argv[2])
print("%-6s %-6s %s" % ("siw0", "rsiw0", "test"))
for t in sorted(set(siw) | set(rsiw)):
    a, b = siw.get(t, "-"), rsiw.get(t, "-")
    if (a, b) != ("skip", "skip"):
        print("%-6s %-6s %s" % (a, b, t))
nskip = sum(1 for t in siw if siw[t] == "skip" and rsiw.get(t) == "skip")
print("(%d tests skipped on both)" % nskip)
worse = [t for t in sorted(siw) if siw[t] == "ok" and rsiw.get(t) != "ok"]
better = [t for t in sorted(rsiw) if rsiw[t] == "ok" and siw.get(t) != "ok"]
for t in worse:
    print("REGRESSION: %s: siw0 ok, rsiw0 %s %s" % (t, rsiw.get(t, "missing"), rwhy.get(t, "")))
for t in better:
    print("better: %s: rsiw0 ok, siw0 %s" % (t, siw.get(t, "missing")))
print("%d tests siw0 passes and rsiw0 does not" % len(worse))
sys.exit(1 if worse or not siw else 0)
PY
}

t_logs() {
	local dev
	for dev in siw0 rsiw0; do
		echo "---- $dev: errors and failures"
		grep -E -A12 '^(ERROR|FAIL): ' "$WORK/$dev.log" | grep -E '^(ERROR|FAIL): |Error|error' | head -60
	done
	true
}

t_cleanup() {
	del_dev rsiw0 && del_dev siw0 && unload_rsiw && rmmod siw && topo_down && rm -rf "$WORK"
}

check "setup: rsiw0 and siw0, suite unpacked" t_setup
for dev in siw0 rsiw0; do
	desc="rdma-core suite on $dev runs to the end"
	[ $dev = siw0 ] && desc="$desc (upstream reference)"
	check "$desc" t_suite $dev
	sed "s/^/# $dev: /" "$WORK/$dev.summary" 2>/dev/null
done
# Full listing (not only the last lines check shows on failure).
t_logs | sed 's/^/# /'
kmsg_mark
out=$(t_compare 2>&1); rc=$?
echo "$out" | sed 's/^/# /'
kmsg_check || rc=1
[ $rc = 0 ] && ktap_test_pass "rsiw passes every test siw passes" ||
	ktap_test_fail "rsiw passes every test siw passes"
check "cleanup" t_cleanup
ktap_finished
