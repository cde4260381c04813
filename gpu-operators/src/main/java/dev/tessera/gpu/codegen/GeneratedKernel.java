package dev.tessera.gpu.codegen;

/**
 * One generated kernel's PTX, before the prelude is put in front of it.
 *
 * @param entry the kernel's entry name (unique per key)
 * @param key everything the kernel bakes in ({@link FilterProjectGenerator#key}); equal keys, equal
 *     kernels
 * @param ptx the kernel's PTX text: its .entry, with no module header
 */
public record GeneratedKernel(String entry, String key, String ptx) {}
