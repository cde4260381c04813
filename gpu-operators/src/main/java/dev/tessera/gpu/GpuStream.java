package dev.tessera.gpu;

/**
 * An ordered queue of copies and kernel launches. On CUDA the operations are asynchronous: host
 * memory they read or write (pinned staging memory only) must stay untouched until
 * {@link #synchronize()} returns. On the host reference backend they complete at once.
 */
public interface GpuStream extends AutoCloseable {
  /** Copies {@code bytes} from pinned host memory to device memory. */
  void copyHostToDevice(long hostAddress, long deviceAddress, long bytes);

  /** Copies {@code bytes} from device memory to pinned host memory. */
  void copyDeviceToHost(long deviceAddress, long hostAddress, long bytes);

  /** Copies {@code bytes} within device memory. */
  void copyDeviceToDevice(long sourceAddress, long destinationAddress, long bytes);

  /** Sets {@code bytes} of device memory to {@code value}. */
  void fill(long deviceAddress, long bytes, byte value);

  /** Waits until everything queued so far has finished; throws if any of it failed. */
  void synchronize();

  @Override
  void close();
}
