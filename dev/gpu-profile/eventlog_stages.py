#!/usr/bin/env python3
"""Where a Spark query's wall clock goes, from an uncompressed Spark event log.

  eventlog_stages.py EVENTS_FILE

For each SQL execution (a query run by run-ssb.sh is one collectAsList execution): its wall
clock, then per job and stage the task count, when its tasks started and ended relative to the
execution's start, the spread of task durations and the executor run and CPU time summed over
its tasks. The stage that reads the fact table shows whether the tasks or the driver's work
around them (planning, broadcasts, the final merge) set a query's time.

Make the log with run-ssb.sh's --conf spark.eventLog.enabled=true --conf
spark.eventLog.dir=file://DIR --conf spark.eventLog.compress=false.
"""
import collections
import json
import sys


def executions(path):
    """{execution id: {start, end, desc, jobs: [{id, start, tasks: [task tuples]}]}}."""
    found = {}
    job_of_stage = {}
    for line in open(path):
        e = json.loads(line)
        kind = e["Event"]
        if kind.endswith("SQLExecutionStart"):
            found[e["executionId"]] = {"start": e["time"], "desc": e.get("description", "")[:60],
                                       "jobs": []}
        elif kind.endswith("SQLExecutionEnd") and e["executionId"] in found:
            found[e["executionId"]]["end"] = e["time"]
        elif kind == "SparkListenerJobStart":
            props = e.get("Properties") or {}
            job = {"id": e["Job ID"], "start": e["Submission Time"], "tasks": []}
            for stage in e["Stage Infos"]:
                job_of_stage[stage["Stage ID"]] = job
            execution = found.get(int(props.get("spark.sql.execution.id", -1)))
            if execution is not None:
                execution["jobs"].append(job)
        elif kind == "SparkListenerTaskEnd" and e["Stage ID"] in job_of_stage:
            info, m = e["Task Info"], e.get("Task Metrics") or {}
            job_of_stage[e["Stage ID"]]["tasks"].append(
                (e["Stage ID"], info["Launch Time"], info["Finish Time"],
                 m.get("Executor Run Time", 0), m.get("Executor CPU Time", 0) / 1e6))
    return found


def main(path):
    for eid, x in sorted(executions(path).items()):
        if "end" not in x:
            continue
        print("execution %d: %d ms  %s" % (eid, x["end"] - x["start"], x["desc"]))
        for job in x["jobs"]:
            stages = collections.defaultdict(list)
            for t in job["tasks"]:
                stages[t[0]].append(t)
            for stage, tasks in sorted(stages.items()):
                first = min(t[1] for t in tasks) - x["start"]
                last = max(t[2] for t in tasks) - x["start"]
                durations = sorted(t[2] - t[1] for t in tasks)
                print("  job %d stage %d: %d tasks, from +%d to +%d ms, task ms min %d median %d"
                      " max %d, run ms summed %d, CPU ms summed %d"
                      % (job["id"], stage, len(tasks), first, last, durations[0],
                         durations[len(durations) // 2], durations[-1],
                         sum(t[3] for t in tasks), sum(t[4] for t in tasks)))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
