package dev.tessera.gpu.host;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.join.JoinTable;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.expr.HostInterpreter;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.RowError;
import dev.tessera.gpu.expr.RowErrorException;
import dev.tessera.gpu.kernels.ProgramKernel;
import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.memory.DeviceBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.util.MemoryUtil;

/** {@link ProgramKernel} as a row loop over {@link HostInterpreter}. */
final class HostFilterProject implements ProgramKernel {
  private long lastKernelNanos;

  @Override
  public long lastKernelNanos() {
    return lastKernelNanos;
  }

  @Override
  public ColumnBatch<DeviceColumn> run(Program program, List<JoinTable> tables,
      ColumnBatch<DeviceColumn> input, ArenaPool pool, GpuStream stream) {
    long started = System.nanoTime();
    try (EncodedInput plain = EncodedInput.of(input, pool)) {
      return evaluate(program, tables, plain.batch(), pool);
    } finally {
      lastKernelNanos = System.nanoTime() - started;
    }
  }

  private ColumnBatch<DeviceColumn> evaluate(Program program, List<JoinTable> tables,
      ColumnBatch<DeviceColumn> input, ArenaPool pool) {
    // The host backend's tables are HostJoinTables: they expose their rows to the interpreter.
    List<HostJoinTable> hostTables = new ArrayList<>(tables.size());
    for (int i = 0; i < tables.size(); i++) {
      if (!(tables.get(i) instanceof HostJoinTable h)) {
        throw new IllegalArgumentException("a join table of another backend: " + tables.get(i));
      }
      if (i < program.tables().size() && !h.schema().equals(program.tables().get(i))) {
        throw new IllegalArgumentException("join table " + i + " is " + h.schema()
            + ", the program expects " + program.tables().get(i));
      }
      hostTables.add(h);
    }
    int rows = input.rowCount();
    List<OutputWriter> writers = new ArrayList<>();
    try (DeviceBuffer strings = DeviceBuffer.allocate(pool, program.strings().length)) {
      if (program.strings().length > 0) {
        MemoryUtil.copyToMemory(program.strings(), 0, strings.address(), program.strings().length);
      }
      HostInterpreter interpreter = new HostInterpreter(program, input.columns(),
          hostTables, strings.address());
      int[] kept = new int[rows];
      int keptCount = 0;
      for (Program.Output output : program.outputs()) {
        writers.add(new OutputWriter(output, rows));
      }
      for (int row = 0; row < rows; row++) {
        interpreter.evaluate(row);
        if (program.hasFilter()) {
          checkError(interpreter, program.filterRegister(), row);
        }
        if (!interpreter.keeps()) {
          continue;
        }
        for (OutputWriter w : writers) {
          checkError(interpreter, w.output.register(), row);
          w.collect(interpreter, keptCount);
        }
        kept[keptCount++] = row;
      }
      List<DeviceColumn> columns = new ArrayList<>(writers.size());
      try {
        for (OutputWriter w : writers) {
          columns.add(w.finish(keptCount, pool));
        }
      } catch (RuntimeException e) {
        columns.forEach(DeviceColumn::close);
        throw e;
      }
      return new ColumnBatch<>(columns, keptCount);
    }
  }

  private static void checkError(HostInterpreter interpreter, int register, int row) {
    RowError error = interpreter.error(register);
    if (error != RowError.NONE) {
      throw new RowErrorException(error, row);
    }
  }

  /** Collects one output column's values for the kept rows, then writes its device buffers. */
  private static final class OutputWriter {
    final Program.Output output;
    final long[] values;
    final byte[][] strings;
    final boolean[] valid;

    OutputWriter(Program.Output output, int capacity) {
      this.output = output;
      this.values = new long[capacity];
      this.strings = output.type().isString() ? new byte[capacity][] : null;
      this.valid = new boolean[capacity];
    }

    void collect(HostInterpreter interpreter, int index) {
      int r = output.register();
      valid[index] = interpreter.isValid(r);
      values[index] = interpreter.value(r);
      if (strings != null && valid[index]) {
        byte[] bytes = new byte[interpreter.length(r)];
        MemoryUtil.copyFromMemory(values[index], bytes, 0, bytes.length);
        strings[index] = bytes;
      }
    }

    DeviceColumn finish(int rows, ArenaPool pool) {
      return HostColumns.write(output.type(), rows, values, strings, valid, pool);
    }
  }
}
