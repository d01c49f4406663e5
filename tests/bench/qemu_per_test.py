"""Benchmark report: where the lab VMs' CPU goes, per test and per file.

    ROCE_QEMU_CPU_LOG=/tmp/qemu.tsv tests/run peer rdma     (tests/peer/conftest.py appends a line per test)
    python3 tests/bench/qemu_per_test.py /tmp/qemu.tsv [--top 25]

Each line of the log: the test's node id, its wall seconds and the CPU seconds the QEMU processes used from its
setup to its teardown (a session fixture's VM start counts in the first test that needs it). Prints the tests by
QEMU CPU, the files' sums and the total.
"""

import argparse
import collections


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    rows = []
    for path in args.logs:
        with open(path) as handle:
            for line in handle:
                node, wall, cpu = line.rstrip("\n").rsplit("\t", 2)
                rows.append((node, float(wall), float(cpu)))
    rows.sort(key=lambda row: -row[2])
    print("| test | wall s | QEMU CPU-s |\n|---|---|---|")
    for node, wall, cpu in rows[:args.top]:
        print("| %s | %.0f | %.0f |" % (node, wall, cpu))
    files = collections.defaultdict(lambda: [0.0, 0.0])
    for node, wall, cpu in rows:
        files[node.split("::")[0]][0] += wall
        files[node.split("::")[0]][1] += cpu
    print("\n| file | wall s | QEMU CPU-s |\n|---|---|---|")
    for name, (wall, cpu) in sorted(files.items(), key=lambda item: -item[1][1]):
        print("| %s | %.0f | %.0f |" % (name, wall, cpu))
    print("\ntotal: %d tests, %.0f s wall, %.0f QEMU CPU-s" % (len(rows), sum(r[1] for r in rows), sum(r[2] for r in rows)))


if __name__ == "__main__":
    main()
