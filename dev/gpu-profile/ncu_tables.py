#!/usr/bin/env python3
"""Summaries of Nsight Compute's CSV output for the scripts beside this one.

  ncu_tables.py times CSV [LABEL]      per generated kernel: registers, launches, grid, sum and
                                       median of gpu__time_duration.sum (in launch order)
  ncu_tables.py fused CSV QUERY        the fused aggregate kernel of SSB query QUERY among the
                                       QUERIES the run ran (env QUERIES, comma-separated)
  ncu_tables.py medians CSV N [LABEL]  gpu__time_duration.sum of every measured launch (of any
                                       kernel), in launch order, as the median of each run of N
                                       launches in microseconds, on one line
  ncu_tables.py hotspots SOURCE_CSV    the shares of the stall reasons, the SASS instructions with
                                       the most warp stall samples (and their main reason), and the
                                       share of samples and executed instructions per stretch of 50
                                       (ncu -i R --page source --csv --print-source sass)
  ncu_tables.py path SOURCE_CSV [PERCENT]
                                       the SASS instructions executed at least PERCENT% (50) as
                                       often as a typical hot one, in address order: the path
                                       most of a kernel's items take, and its length
"""
import csv
import os
import signal
import statistics
import sys


def metrics(path):
    """{kernel: {metric: [values]}} in launch order, from `ncu --metrics ... --csv`."""
    rows = [r for r in csv.reader(open(path)) if len(r) > 14]
    if not rows:
        return {}
    head = rows[0]
    kernel, metric, value = (head.index(c) for c in ("Kernel Name", "Metric Name", "Metric Value"))
    found = {}
    for r in rows[1:]:
        found.setdefault(r[kernel], {}).setdefault(r[metric], []).append(
            float(r[value].replace(",", "")))
    return found


def times(path, label=""):
    found = metrics(path)
    if not found:
        print(label, "no kernels measured (see the run's log)")
        return
    total = 0.0
    for name, m in found.items():
        t = m.get("gpu__time_duration.sum", [])
        total += sum(t)
        print("%s %s regs %d launches %d grid %d sum %.1f us median %.2f us" % (
            label, name, m.get("launch__registers_per_thread", [0])[0], len(t),
            max(m.get("launch__grid_size", [0])), sum(t) / 1e3, statistics.median(t) / 1e3))
    print("%s all kernels: %.1f us" % (label, total / 1e3))


def medians(path, n, label=""):
    rows = [r for r in csv.reader(open(path)) if len(r) > 14]
    if not rows:
        print(label, "no kernels measured (see the run's log)")
        return
    head = rows[0]
    metric, value = head.index("Metric Name"), head.index("Metric Value")
    t = [float(r[value].replace(",", "")) / 1e3 for r in rows[1:]
         if r[metric] == "gpu__time_duration.sum"]
    print(label, " ".join("%.1f" % statistics.median(t[i:i + n]) for i in range(0, len(t), n)))


def fused(path, query):
    """The query's fused aggregate kernel: of the aggregate kernels launched at least 8 times
    with grids of 64 blocks or more (one launch per batch of the fact table), the queries' in
    the order they ran (sorted); a run's first such kernel may be the cache's row count."""
    found = metrics(path)
    queries = sorted(os.environ["QUERIES"].split(","))
    names = [n for n, m in found.items() if "aggregate" in n
             and len(m.get("gpu__time_duration.sum", [])) >= 8
             and max(m.get("launch__grid_size", [0])) >= 64]
    names = names[len(names) - len(queries):]
    index = queries.index(query)
    print(names[index] if index < len(names) else "none")


def num(r, c):
    try:
        return float(r[c].replace(",", ""))
    except (IndexError, ValueError):
        return 0.0


def source_table(path):
    """(header, rows, source, samples, executed) of the SASS source table of `ncu --page source
    --csv`: its header, its rows and the columns of the instruction, its warp stall samples and
    its executions; or None."""
    rows = list(csv.reader(open(path)))
    head_at = next((i for i, r in enumerate(rows) if "Source" in r), None)
    if head_at is None:
        print("no source table in", path)
        return None
    head = rows[head_at]
    return (head, rows[head_at + 1:], head.index("Source"),
            head.index("Warp Stall Sampling (All Samples)"), head.index("Instructions Executed"))


def hotspots(path):
    table = source_table(path)
    if table is None:
        return
    head, data, source, samples, executed = table

    total = sum(num(r, samples) for r in data) or 1
    instructions = sum(num(r, executed) for r in data) or 1
    print("%d stall samples, %d warp instructions executed, %d SASS instructions" % (
        total, instructions, len(data)))
    # Per stall reason (ncu's stall_* columns, the "(Not Issued)" copies left out).
    reasons = [(c, name[len("stall_"):]) for c, name in enumerate(head)
               if name.startswith("stall_") and "(" not in name]
    by_reason = {name: sum(num(r, c) for r in data) for c, name in reasons}
    reason_total = sum(by_reason.values()) or 1
    print("by stall reason: " + ", ".join("%s %.1f%%" % (name, 100 * v / reason_total)
          for name, v in sorted(by_reason.items(), key=lambda kv: -kv[1]) if v / reason_total >= 0.01))
    for i in sorted(range(len(data)), key=lambda i: -num(data[i], samples))[:25]:
        top = max(reasons, key=lambda cn: num(data[i], cn[0]), default=(None, ""))
        print("%5.1f%%  %5d  %-14s %s" % (100 * num(data[i], samples) / total, i, top[1],
                                          data[i][source]))
    print("per 50 instructions: samples, executed")
    for s in range(0, len(data), 50):
        part = data[s:s + 50]
        print("%5d  %5.1f%%  %5.1f%%  %s" % (
            s, 100 * sum(num(r, samples) for r in part) / total,
            100 * sum(num(r, executed) for r in part) / instructions, part[0][source][:60]))


def path(path, percent):
    """The SASS instructions executed at least `percent`% as often as a typical hot one (the
    median of the 5% most executed: an instruction that runs twice an item, a loop's join, would
    halve the threshold if it were the reference), in address order (the path most items take),
    in stretches of consecutive instructions, with their executed counts and stall samples, and
    how many such instructions there are."""
    table = source_table(path)
    if table is None:
        return
    head, data, source, samples, executed = table
    counts = sorted((num(r, executed) for r in data), reverse=True)
    top = counts[:max(1, len(counts) // 20)]
    typical = statistics.median(top) or 1
    hot = [i for i, r in enumerate(data) if num(r, executed) >= typical * percent / 100]
    print("%d SASS instructions executed at least %g%% as often as a typical hot one (%d times)"
          % (len(hot), percent, typical))
    previous = None
    for i in hot:
        if previous is not None and i != previous + 1:
            print("  ...")
        print("%5d  %9d  %5d  %s" % (i, num(data[i], executed), num(data[i], samples),
                                     data[i][source].strip()))
        previous = i


if __name__ == "__main__":
    # Piped into head, stop quietly where the reader stops (no BrokenPipeError traceback).
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "times" and len(sys.argv) in (3, 4):
        times(sys.argv[2], sys.argv[3] if len(sys.argv) == 4 else "")
    elif command == "medians" and len(sys.argv) in (4, 5):
        medians(sys.argv[2], int(sys.argv[3]), sys.argv[4] if len(sys.argv) == 5 else "")
    elif command == "fused" and len(sys.argv) == 4:
        fused(sys.argv[2], sys.argv[3])
    elif command == "hotspots" and len(sys.argv) == 3:
        hotspots(sys.argv[2])
    elif command == "path" and len(sys.argv) in (3, 4):
        path(sys.argv[2], float(sys.argv[3]) if len(sys.argv) == 4 else 50)
    else:
        sys.exit(__doc__)
