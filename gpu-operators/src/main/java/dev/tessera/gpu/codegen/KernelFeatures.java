package dev.tessera.gpu.codegen;

/**
 * What a generated kernel may use of the device it is generated for, beyond what every supported
 * device has (Turing, sm_75, the oldest the README names).
 *
 * @param reduxSync whether the device has {@code redux.sync} (sm_80 and newer): a warp's 32-bit
 *     sum, minimum or maximum in one instruction, where sm_75 needs five rounds of shuffles
 */
public record KernelFeatures(boolean reduxSync) {
  /** What every supported device has. */
  public static final KernelFeatures OLDEST = new KernelFeatures(false);

  /** The features of a device of compute capability {@code major.minor}. */
  public static KernelFeatures forDevice(int major, int minor) {
    return new KernelFeatures(major >= 8);
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
