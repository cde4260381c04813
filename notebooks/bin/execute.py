"""Executes one notebook like `jupyter nbconvert --to notebook --execute`, but writes the executed
copy also when a cell fails (so that its output can be read), and exits 1 then.

    execute.py NOTEBOOK OUTPUT KERNEL_NAME CELL_TIMEOUT_SECONDS

A kernel that does not answer its first kernel_info_request within STARTUP_TIMEOUT seconds is
killed and a new one started, up to START_ATTEMPTS times. The kernel's ZeroMQ library (JeroMQ
0.6.0, inside rapaio-jupyter-kernel) now and then starts with a shell socket that never delivers a
message: on a 2-core machine kept busy by six spinning processes, 7 starts in 40 hung so (1 in 25
on an idle one); new client connections to the same kernel did not help, and a fresh kernel
nearly always answers in 2 to 7 s. Before such a kernel is killed it is sent SIGQUIT, so that its
thread dump lands in the log.
"""
import atexit
import os
import signal
import sys
import time

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError

STARTUP_TIMEOUT = 45
START_ATTEMPTS = 5
START_FAILURES = ("Kernel didn't respond", "Kernel died before replying")


class KernelStartFailed(Exception):
    """The kernel never answered kernel_info (or died first); no cell has run."""


class DumpingClient(NotebookClient):
    """A NotebookClient that tells a failed start from a failed cell, and has a kernel that never
    answered print its threads before it is killed."""

    async def async_start_new_kernel_client(self):
        try:
            return await super().async_start_new_kernel_client()
        except RuntimeError as e:
            if not str(e).startswith(START_FAILURES):
                raise
            raise KernelStartFailed(str(e)) from e

    async def _async_cleanup_kernel(self):
        process = getattr(getattr(self.km, "provisioner", None), "process", None)
        if process is not None and process.poll() is None and not getattr(self, "kc_ready", False):
            process.send_signal(signal.SIGQUIT)  # a JVM writes its thread dump to stderr
            time.sleep(2)
        await super()._async_cleanup_kernel()


def main():
    source, output, kernel_name, timeout = sys.argv[1:5]
    nb = nbformat.read(source, as_version=4)
    try:
        for attempt in range(1, START_ATTEMPTS + 1):
            client = DumpingClient(nb, kernel_name=kernel_name, timeout=int(timeout),
                                   startup_timeout=STARTUP_TIMEOUT,
                                   on_notebook_start=lambda **_: mark_ready(client),
                                   resources={"metadata": {
                                       "path": os.path.dirname(os.path.abspath(source))}})
            try:
                client.execute()
                return 0
            except KernelStartFailed as e:
                atexit.unregister(client._cleanup_kernel)  # nbclient registered it; done already
                print(f"execute.py: kernel start {attempt} of {START_ATTEMPTS} failed: {e}",
                      file=sys.stderr, flush=True)
        return 1
    except (CellExecutionError, CellTimeoutError) as e:
        print(e, file=sys.stderr)
        return 1
    finally:
        nbformat.write(nb, output)


def mark_ready(client):
    """Called once the kernel answered: from here a failure is a cell's, never the start's."""
    client.kc_ready = True


if __name__ == "__main__":
    sys.exit(main())
