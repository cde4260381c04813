"""Executes one notebook like `jupyter nbconvert --to notebook --execute`, with one change: the
client waits a few seconds after starting the kernel before it connects. rapaio-jupyter-kernel
2.3.0 starts listening before its message handlers are set, and a kernel_info_request that
arrives in between kills its shell thread (NullPointerException on `handlers`); the kernel then
never answers. Writes the executed copy also when a cell fails, and exits 1 then.

    execute.py NOTEBOOK OUTPUT KERNEL_NAME CELL_TIMEOUT_SECONDS
"""
import asyncio
import os
import sys

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError


class PatientClient(NotebookClient):
    async def async_start_new_kernel(self, **kwargs):
        await super().async_start_new_kernel(**kwargs)
        await asyncio.sleep(float(os.environ.get("NOTEBOOKS_KERNEL_SETTLE_SECONDS", "8")))


def main():
    source, output, kernel_name, timeout = sys.argv[1:5]
    nb = nbformat.read(source, as_version=4)
    client = PatientClient(nb, kernel_name=kernel_name, timeout=int(timeout), startup_timeout=60,
                           resources={"metadata": {"path": os.path.dirname(os.path.abspath(source))}})
    try:
        client.execute()
        return 0
    except (CellExecutionError, CellTimeoutError) as e:
        print(e, file=sys.stderr)
        return 1
    finally:
        nbformat.write(nb, output)


if __name__ == "__main__":
    sys.exit(main())
