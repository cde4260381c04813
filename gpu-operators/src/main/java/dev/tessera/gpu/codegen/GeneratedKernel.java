package dev.tessera.gpu.codegen;

/**
 * One generated kernel's PTX, before the prelude is put in front of it.
 *
 * @param entry the kernel's entry name (unique per key)
 * @param key everything the kernel bakes in ({@link FilterProjectGenerator#key}); equal keys, equal
 *     kernels
 * @param ptx the kernel's PTX text: its .entry, with no module header
 * @param target the {@code .target} its module must declare ("sm_80"), or null for the prelude's
 * @param leaner the same kernel (same entry and key) written with less code, for where this one
 *     needs more registers than it asks for ({@link GeneratedModule#compile}), or null
 * @param leanerAtOnce whether the generator expects this form to need more registers than it
 *     asks for, so that {@link GeneratedModule#compile} starts its leaner forms' compiles beside
 *     its own rather than after its rejection (the same form is used either way)
 */
public record GeneratedKernel(String entry, String key, String ptx, String target,
    GeneratedKernel leaner, boolean leanerAtOnce) {
  /** A kernel that runs on every supported device: its module declares the prelude's target. */
  public GeneratedKernel(String entry, String key, String ptx) {
    this(entry, key, ptx, null);
  }

  /** A kernel without a leaner form. */
  public GeneratedKernel(String entry, String key, String ptx, String target) {
    this(entry, key, ptx, target, null);
  }

  /** A kernel whose leaner forms are compiled only once it is rejected. */
  public GeneratedKernel(String entry, String key, String ptx, String target,
      GeneratedKernel leaner) {
    this(entry, key, ptx, target, leaner, false);
  }
}
