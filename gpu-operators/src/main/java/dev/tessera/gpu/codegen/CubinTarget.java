package dev.tessera.gpu.codegen;

import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Which cubin architecture the in-jar PTX compiler should produce for a device, or none: then the
 * caller loads the PTX itself through the driver's JIT ({@code cuModuleLoadDataEx}), which knows
 * every architecture the installed driver does.
 *
 * <p>A cubin for sm_XY runs on devices of compute capability X.Z for Z &ge; Y (CUDA's binary
 * compatibility; never across major versions, and never for the arch-specific "a" variants), so
 * the pick is the newest sm_X{0..minor} the compiler accepts. Which it accepts is asked of the
 * compiler itself, once per architecture, by compiling an empty module for it: the library has no
 * call that lists them. nvPTXCompiler 12.0 (JCuda 12.6.0) accepts sm_50 .. sm_90 and sm_90a and
 * refuses sm_100 and sm_120 ("Value 'sm_100' is not defined for option 'gpu-name'"), so Blackwell
 * devices go to the driver JIT.
 */
public final class CubinTarget {
  private static final ConcurrentHashMap<String, Boolean> ACCEPTED = new ConcurrentHashMap<>();

  private CubinTarget() {}

  /** Whether the in-jar compiler can produce a cubin that runs on a device of this capability. */
  public static boolean supports(int major, int minor) {
    return forDevice(major, minor).isPresent();
  }

  /**
   * The architecture to compile for on a device of compute capability {@code major.minor}: the
   * newest {@code sm_<major><m>}, m &le; minor, that the compiler accepts; empty if there is none
   * or the compiler cannot be loaded.
   */
  public static Optional<String> forDevice(int major, int minor) {
    if (major < 1 || minor < 0 || minor > 9 || !PtxCompiler.available()) {
      return Optional.empty();
    }
    for (int m = minor; m >= 0; m--) {
      String arch = "sm_" + major + m;
      if (accepts(arch)) {
        return Optional.of(arch);
      }
    }
    return Optional.empty();
  }

  /**
   * Whether the in-jar compiler accepts {@code --gpu-name=arch} (asked once per architecture; about
   * 30 ms when it does, well under 1 ms when it does not).
   */
  public static boolean accepts(String arch) {
    // Anything but sm_XY would make the probe's .target one the compiler crashes on.
    if (!PtxCompiler.ARCH.matcher(arch).matches() || !PtxCompiler.available()) {
      return false;
    }
    return ACCEPTED.computeIfAbsent(arch, CubinTarget::probe);
  }

  private static boolean probe(String arch) {
    String emptyModule = ".version " + PtxCompiler.maxPtxVersion() + "\n.target " + arch
        + "\n.address_size 64\n";
    return PtxCompilerRun.run(emptyModule, List.of("--gpu-name=" + arch)).succeeded();
  }
}
