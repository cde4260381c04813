package dev.tessera.gpu.memory;

/**
 * One block of device memory from an {@link ArenaPool}, owned by exactly one holder, who closes it.
 * On the host reference backend "device memory" is off-heap host memory with the same layout.
 */
public final class DeviceBuffer implements AutoCloseable {
  private final ArenaPool pool;
  private final long address;
  private final long size;
  private boolean closed;

  private DeviceBuffer(ArenaPool pool, long address, long size) {
    this.pool = pool;
    this.address = address;
    this.size = size;
  }

  /** Allocates {@code size} bytes from {@code pool}; the contents are undefined. */
  public static DeviceBuffer allocate(ArenaPool pool, long size) {
    return new DeviceBuffer(pool, pool.allocate(size), size);
  }

  /** The device address (0 for an empty buffer). */
  public long address() {
    checkOpen();
    return address;
  }

  /** The size asked for, in bytes. */
  public long size() {
    return size;
  }

  public boolean isClosed() {
    return closed;
  }

  @Override
  public synchronized void close() {
    if (closed) {
      throw new IllegalStateException("device buffer at 0x" + Long.toHexString(address)
          + " closed twice");
    }
    closed = true;
    pool.free(address);
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("device buffer used after close");
    }
  }
}
