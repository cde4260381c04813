package dev.tessera.gpu.codegen;

/**
 * What a generated kernel may use of the device it is generated for, beyond what every supported
 * device has (Turing, sm_75, the oldest the README names).
 *
 * @param reduxSync whether the device has {@code redux.sync} (sm_80 and newer): a warp's 32-bit
 *     sum, minimum or maximum in one instruction, where sm_75 needs five rounds of shuffles
 * @param shared the device's shared memory, which sizes the table a kernel that fills a
 *     multiprocessor writes into its code ({@link LocalTableSize#wholeMultiprocessorEntries})
 */
public record KernelFeatures(boolean reduxSync, SharedMemory shared) {
  /** What every supported device has. */
  public static final KernelFeatures OLDEST = forDevice(7, 5);

  /**
   * A device's shared memory, in bytes (the CUDA device attributes of the same names).
   *
   * @param perMultiprocessor MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
   * @param perBlockOptIn MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: the most one block may ask for
   * @param reservedPerBlock RESERVED_SHARED_MEMORY_PER_BLOCK: what the system keeps of a block's
   */
  public record SharedMemory(int perMultiprocessor, int perBlockOptIn, int reservedPerBlock) {
    /**
     * The shared memory of every device of compute capability {@code major.minor}, as the CUDA C++
     * Programming Guide's table of technical specifications gives it (KiB per multiprocessor and
     * per block: 7.0 96 / 96, 7.5 64 / 64, 8.0 and 8.7 164 / 163, 8.6, 8.9 and 12.x 100 / 99, 9.0
     * and 10.x 228 / 227; 1 KiB reserved a block from 8.0 on). For kernels generated without a
     * device (tests, {@code tessera sql --kernels}); on a device, its own attributes are used.
     * A capability the table does not know gets 100 / 99, the least of those since 8.0.
     */
    public static SharedMemory ofCapability(int major, int minor) {
      int kib;
      int blockKib;
      if (major < 8) {
        kib = major == 7 && minor == 0 ? 96 : 64;
        blockKib = kib;
      } else if ((major == 8 && (minor == 0 || minor == 7)) || major == 9 || major == 10) {
        kib = major == 8 ? 164 : 228;
        blockKib = kib - 1;
      } else {
        kib = 100;
        blockKib = 99;
      }
      return new SharedMemory(kib << 10, blockKib << 10, major < 8 ? 0 : 1 << 10);
    }
  }

  /** The features of a device of compute capability {@code major.minor} with {@code shared}. */
  public static KernelFeatures forDevice(int major, int minor, SharedMemory shared) {
    return new KernelFeatures(major >= 8, shared);
  }

  /**
   * The features of every device of compute capability {@code major.minor} ({@link
   * SharedMemory#ofCapability}).
   */
  public static KernelFeatures forDevice(int major, int minor) {
    return forDevice(major, minor, SharedMemory.ofCapability(major, minor));
  }

  /** The features of the devices an {@code sm_XY} cubin is compiled for ("sm_90"). */
  public static KernelFeatures forArch(String arch) {
    if (!PtxCompiler.ARCH.matcher(arch).matches()) {
      throw new IllegalArgumentException("an architecture is written sm_XY (sm_90), not '" + arch
          + "'");
    }
    int number = Integer.parseInt(arch.substring(3).replace("a", "")); // sm_90a: 90
    return forDevice(number / 10, number % 10);
  }

  /**
   * The {@code .target} a module using these features must declare, or null where the prelude's
   * (the oldest device's) will do.
   */
  String ptxTarget() {
    return reduxSync ? "sm_80" : null;
  }
}
