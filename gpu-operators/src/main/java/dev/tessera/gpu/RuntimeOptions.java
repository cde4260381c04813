package dev.tessera.gpu;

/**
 * How to open a {@link Backend}.
 *
 * @param deviceOrdinal the CUDA device to open (the executor's assigned GPU)
 * @param deviceMemoryCapBytes the most device memory the pool may take; 0 means 80% of the
 *     device's free memory at open time (CUDA) or 4 GiB (host reference)
 * @param pinnedMemoryCapBytes the most pinned host memory the staging pool may take
 * @param deviceChunkBytes the size of each device-memory chunk the pool reserves at a time
 * @param pinnedChunkBytes the size of each pinned-memory chunk the pool reserves at a time
 * @param deviceCapSetting the setting that controls {@code deviceMemoryCapBytes}, named in errors
 * @param pinnedCapSetting the setting that controls {@code pinnedMemoryCapBytes}, named in errors
 * @param codegen whether CUDA pipelines run as generated kernels where the generator covers them
 *     (the interpreter kernels otherwise; spark.tessera.codegen.enabled)
 */
public record RuntimeOptions(
    int deviceOrdinal,
    long deviceMemoryCapBytes,
    long pinnedMemoryCapBytes,
    long deviceChunkBytes,
    long pinnedChunkBytes,
    String deviceCapSetting,
    String pinnedCapSetting,
    boolean codegen) {

  public static final long MiB = 1L << 20;
  public static final long GiB = 1L << 30;

  public RuntimeOptions {
    if (deviceOrdinal < 0) {
      throw new IllegalArgumentException("device ordinal must be >= 0, was " + deviceOrdinal);
    }
    if (deviceMemoryCapBytes < 0) {
      throw new IllegalArgumentException(
          deviceCapSetting + " must be >= 0 (0: automatic), was " + deviceMemoryCapBytes);
    }
    if (pinnedMemoryCapBytes <= 0) {
      throw new IllegalArgumentException(
          pinnedCapSetting + " must be positive, was " + pinnedMemoryCapBytes);
    }
  }

  /** The options without the codegen switch: generated kernels off. */
  public RuntimeOptions(int deviceOrdinal, long deviceMemoryCapBytes, long pinnedMemoryCapBytes,
      long deviceChunkBytes, long pinnedChunkBytes, String deviceCapSetting,
      String pinnedCapSetting) {
    this(deviceOrdinal, deviceMemoryCapBytes, pinnedMemoryCapBytes, deviceChunkBytes,
        pinnedChunkBytes, deviceCapSetting, pinnedCapSetting, false);
  }

  /** Device 0, automatic device cap, 1 GiB of pinned staging memory, interpreter kernels. */
  public static RuntimeOptions defaults() {
    return new RuntimeOptions(0, 0, GiB, 256 * MiB, 64 * MiB,
        "deviceMemoryCapBytes", "pinnedMemoryCapBytes", false);
  }

  public RuntimeOptions withCodegen(boolean enabled) {
    return new RuntimeOptions(deviceOrdinal, deviceMemoryCapBytes, pinnedMemoryCapBytes,
        deviceChunkBytes, pinnedChunkBytes, deviceCapSetting, pinnedCapSetting, enabled);
  }

  public RuntimeOptions withDeviceOrdinal(int ordinal) {
    return new RuntimeOptions(ordinal, deviceMemoryCapBytes, pinnedMemoryCapBytes,
        deviceChunkBytes, pinnedChunkBytes, deviceCapSetting, pinnedCapSetting, codegen);
  }

  public RuntimeOptions withDeviceMemoryCap(long bytes) {
    return new RuntimeOptions(deviceOrdinal, bytes, pinnedMemoryCapBytes,
        deviceChunkBytes, pinnedChunkBytes, deviceCapSetting, pinnedCapSetting, codegen);
  }

  public RuntimeOptions withPinnedMemoryCap(long bytes) {
    return new RuntimeOptions(deviceOrdinal, deviceMemoryCapBytes, bytes,
        deviceChunkBytes, pinnedChunkBytes, deviceCapSetting, pinnedCapSetting, codegen);
  }
}
