#!/usr/bin/env python3
"""Counts the states and top frames of Spark's task threads over the Java thread dumps in a log.

  thread_dumps.py LOG [FRAMES]

Only task threads ("Executor task launch worker") with a frame of Tessera's code (dev.tessera)
are counted, so the CPU side of an SSB run is left out. Prints how many dumps and samples there
were, the samples by thread state, then the most common stacks cut to FRAMES frames (default 6)
with their count and share, and the samples by their innermost frame of Tessera's code (which
of Tessera's steps the thread was in, whatever library code it was running below it).
"""
import collections
import re
import sys


def samples(text):
    """(dump count, [(state, [frames])]) of the Tessera task threads in every dump."""
    dumps = text.split("Full thread dump")[1:]
    found = []
    for dump in dumps:
        for thread in re.split(r'\n\n(?=")', dump):
            if not thread.startswith('"Executor task launch worker') or "dev.tessera" not in thread:
                continue
            state = re.search(r"java.lang.Thread.State: (\S+)", thread)
            frames = re.findall(r"\n\s+at (\S+)", thread)
            found.append((state.group(1) if state else "?", frames))
    return len(dumps), found


def main(path, depth):
    dumps, found = samples(open(path, errors="replace").read())
    print("dumps %d, samples of task threads in Tessera's code %d" % (dumps, len(found)))
    if not found:
        return
    states = collections.Counter(state for state, _ in found)
    print("by state: " + ", ".join("%s %d" % s for s in states.most_common()))
    stacks = collections.Counter(
        (state, " < ".join(frames[:depth])) for state, frames in found)
    for (state, stack), count in stacks.most_common(40):
        print("%4d %5.1f%% %s %s" % (count, 100.0 * count / len(found), state, stack))
    print("by the innermost frame of Tessera's code:")
    steps = collections.Counter(
        (state, next(f for f in frames if f.startswith("dev.tessera"))) for state, frames in found)
    for (state, frame), count in steps.most_common(25):
        print("%4d %5.1f%% %s %s" % (count, 100.0 * count / len(found), state, frame))


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 6)
