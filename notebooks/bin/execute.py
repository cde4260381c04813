"""Executes one notebook like `jupyter nbconvert --to notebook --execute`, but writes the executed
copy also when a cell fails (so that its output can be read), and exits 1 then.

    execute.py NOTEBOOK OUTPUT KERNEL_NAME CELL_TIMEOUT_SECONDS
"""
import os
import sys

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError


def main():
    source, output, kernel_name, timeout = sys.argv[1:5]
    nb = nbformat.read(source, as_version=4)
    client = NotebookClient(nb, kernel_name=kernel_name, timeout=int(timeout), startup_timeout=120,
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
