package dev.tessera.gpu.codegen;

import java.util.Arrays;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;

/**
 * A PTX module compiled to a cubin: the image {@code cuModuleLoadData} takes, and what ptxas
 * reported of each entry function in it.
 *
 * @param arch the architecture compiled for, "sm_90"
 * @param ptx the module text compiled (for a generated kernel: the prelude and the form of the
 *     kernel {@link GeneratedModule#compile} took, with any {@code .maxnreg} it raised)
 * @param options the ptxas options given beyond the architecture ("-O1"), as the compile took them
 * @param cubin the ELF image (a copy is kept; the accessor returns a copy)
 * @param reports a report per entry function, in the order ptxas compiled them
 * @param compileNanos how long the compile took
 * @param infoLog the compiler's whole info log
 */
public record CompiledKernel(String arch, String ptx, List<String> options, byte[] cubin,
    List<CompileReport> reports, long compileNanos, String infoLog) {

  public CompiledKernel {
    options = List.copyOf(options);
    cubin = cubin.clone();
    reports = List.copyOf(reports);
  }

  @Override
  public byte[] cubin() {
    return cubin.clone();
  }

  /** This compile, said to have taken {@code nanos} (a compile that counts others' time too). */
  public CompiledKernel withCompileNanos(long nanos) {
    return new CompiledKernel(arch, ptx, options, cubin, reports, nanos, infoLog);
  }

  /** The report of entry function {@code function}. */
  public CompileReport report(String function) {
    return reports.stream().filter(r -> r.function().equals(function)).findFirst()
        .orElseThrow(() -> new NoSuchElementException("no entry function " + function
            + " in the module; it has " + reports.stream().map(CompileReport::function).toList()));
  }

  /** The report of the module's one entry function. */
  public CompileReport report() {
    if (reports.size() != 1) {
      throw new IllegalStateException("the module has " + reports.size()
          + " entry functions, not one: name the one wanted");
    }
    return reports.get(0);
  }

  /** Every entry {@link CompileReport#clean() clean}: no stack frames, no spills. */
  public boolean clean() {
    return reports.stream().allMatch(CompileReport::clean);
  }

  /** The compiler's warnings ("ptxas warning : ..." lines of the info log). */
  public List<String> warnings() {
    return infoLog.lines().filter(line -> line.startsWith("ptxas warning")).toList();
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof CompiledKernel that && arch.equals(that.arch)
        && ptx.equals(that.ptx) && options.equals(that.options)
        && Arrays.equals(cubin, that.cubin) && reports.equals(that.reports)
        && compileNanos == that.compileNanos && infoLog.equals(that.infoLog);
  }

  @Override
  public int hashCode() {
    return Objects.hash(arch, ptx, options, Arrays.hashCode(cubin), reports, compileNanos, infoLog);
  }

  @Override
  public String toString() {
    return "CompiledKernel[" + arch + (options.isEmpty() ? "" : " " + String.join(" ", options))
        + ", " + cubin.length + " B cubin, " + reports.stream()
        .map(CompileReport::summary).toList() + ", " + compileNanos / 1000 + " us]";
  }
}
