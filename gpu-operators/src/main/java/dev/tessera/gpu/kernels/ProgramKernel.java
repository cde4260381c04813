package dev.tessera.gpu.kernels;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.join.JoinTable;
import java.util.List;
import dev.tessera.gpu.memory.ArenaPool;

/**
 * The fused filter-and-project operator (DESIGN.md §3): evaluates a {@link Program} over every row
 * of a device batch in one pass, keeps the rows its filter passes in their input order, and writes
 * the projected columns. Output nulls are validity bits; output strings are offsets + bytes.
 */
public interface ProgramKernel {
  /**
   * Runs {@code program} over {@code input} and returns the output batch, in new buffers from
   * {@code pool}; waits for the result. The input stays owned by the caller.
   *
   * @throws dev.tessera.gpu.expr.RowErrorException when a row the filter keeps (or the filter
   *     itself) raised an ANSI-mode error; it names the first such row
   */
  default ColumnBatch<DeviceColumn> run(Program program, ColumnBatch<DeviceColumn> input,
      ArenaPool pool, GpuStream stream) {
    return run(program, List.of(), input, pool, stream);
  }

  /**
   * Runs {@code program}, which probes {@code tables} (in the order of {@link Program#tables()},
   * with those shapes), as {@link #run(Program, ColumnBatch, ArenaPool, GpuStream)} does.
   */
  ColumnBatch<DeviceColumn> run(Program program, List<JoinTable> tables,
      ColumnBatch<DeviceColumn> input, ArenaPool pool, GpuStream stream);

  /**
   * How long the last {@link #run}'s kernels took, in nanoseconds: measured with device events
   * around the launches on CUDA (not host clocks), and the loop's wall time on the host
   * reference backend.
   */
  long lastKernelNanos();

  /**
   * How long the last {@link #run} spent generating and compiling its kernel, in nanoseconds: 0
   * when it ran a kernel compiled before, or the interpreter.
   */
  default long lastCompileNanos() {
    return 0;
  }
}
