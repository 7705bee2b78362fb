#!/usr/bin/env bash
# Where a command's CPU goes, program by program: runs COMMAND (by default the whole of `.ci/run`)
# with the kernel's process accounting on, then prints the CPU-seconds (user + system) of every
# program it started, summed by program name, and summed by the test program that started them
# (the nearest ancestor that is not a shell, ctest, ninja, a compiler driver or one of the programs
# tests start). A process is accounted when it ends, so a daemon still running at the end is not
# counted. docs/PERFORMANCE.md ("Where the tests' own CPU goes") has a run of it.
#
# Usage, from the repository root, as root (accton needs it): bash bench/cpu_by_program.sh [COMMAND...]
# Needs Debian's acct (accton, dump-acct) and python3. Accounting covers the whole machine while it
# runs: keep other work off it.
set -euo pipefail
cd "$(dirname "$0")/.."
for program in accton dump-acct python3; do
  command -v "$program" >/dev/null ||
    { echo "cpu_by_program.sh: needs $program (apt-get install acct python3)" >&2; exit 2; }
done
((EUID == 0)) || { echo "cpu_by_program.sh: run as root: accton needs it" >&2; exit 2; }
(($# > 0)) || set -- bash .ci/run

work=$(mktemp -d)
# Accounting stays on for nobody once this script ends, whatever way it ends.
trap 'accton off >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
: >"$work/pacct"
accton "$work/pacct" >/dev/null
started=$(date +%s)
status=0
"$@" || status=$?
accton off >/dev/null
echo "cpu_by_program.sh: '$*' exited $status after $(($(date +%s) - started)) s"

dump-acct "$work/pacct" | python3 -c '
import collections, sys
# dump-acct: command|version|utime|stime|elapsed|uid|gid|mem|io|pid|ppid|... (times in ticks of 1/100 s)
records = []
for line in sys.stdin:
    fields = [f.strip() for f in line.split("|")]
    records.append((fields[0], (float(fields[2]) + float(fields[3])) / 100, int(fields[9]),
                    int(fields[10])))
# A parent ends after its children, so its record is the nearest later one with the child'"'"'s ppid
# (process IDs are reused over a long run).
parent, later = [None] * len(records), {}
for i in range(len(records) - 1, -1, -1):
    parent[i] = later.get(records[i][3])
    later[records[i][2]] = i
passing = {"bash", "sh", "ctest", "ninja", "nice", "xargs", "timeout", "env", "collect2", "c++",
           "g++", "clang++", "ccache", "cmake", "gpunode", "kubectl", "openssl", "dpkg-deb",
           "unshare", "containerd", "containerd-shim", "runc", "python3", "cp", "mount"}
by_program, runs, by_test = collections.Counter(), collections.Counter(), collections.Counter()
for i, (name, cpu, _, _) in enumerate(records):
    by_program[name] += cpu
    runs[name] += 1
    at, owner = i, "(ended before the run or still running: " + name + ")"
    while at is not None:
        if records[at][0] not in passing:
            owner = records[at][0]
            break
        at = parent[at]
    by_test[owner] += cpu
print(f"\n{sum(by_program.values()):.0f} CPU-seconds accounted\n\nby program (CPU-s, runs):")
for name, cpu in by_program.most_common(25):
    print(f"{cpu:9.1f} {runs[name]:7d}  {name}")
print("\nby the program that started them (CPU-s):")
for name, cpu in by_test.most_common(25):
    print(f"{cpu:9.1f}  {name}")
'
exit "$status"
