package dev.tessera.gpu.expr;

import dev.tessera.gpu.GpuException;

/** A row of a batch raised an ANSI-mode error; the Spark layer turns it into Spark's own error. */
public final class RowErrorException extends GpuException {
  private static final long serialVersionUID = 1L;
  private final RowError error;
  private final long row;

  public RowErrorException(RowError error, long row) {
    super(error + " in row " + row + " of the batch");
    this.error = error;
    this.row = row;
  }

  public RowError error() {
    return error;
  }

  /** The row (index in the input batch) that raised it; the first one where the backend knows. */
  public long row() {
    return row;
  }
}
