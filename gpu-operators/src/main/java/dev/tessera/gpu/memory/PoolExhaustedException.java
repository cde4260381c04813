package dev.tessera.gpu.memory;

import dev.tessera.gpu.GpuException;

/** A pool could not satisfy an allocation: its cap is reached or the memory behind it ran out. */
public final class PoolExhaustedException extends GpuException {
  private static final long serialVersionUID = 1L;

  public PoolExhaustedException(String message) {
    super(message);
  }

  public PoolExhaustedException(String message, Throwable cause) {
    super(message, cause);
  }
}
