package dev.tessera.gpu.host;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.Validity;
import dev.tessera.gpu.expr.HostInterpreter;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.RowError;
import dev.tessera.gpu.expr.RowErrorException;
import dev.tessera.gpu.kernels.FilterProjectKernel;
import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.memory.DeviceBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.util.MemoryUtil;

/** {@link FilterProjectKernel} as a row loop over {@link HostInterpreter}. */
final class HostFilterProject implements FilterProjectKernel {
  private long lastKernelNanos;

  @Override
  public long lastKernelNanos() {
    return lastKernelNanos;
  }

  @Override
  public ColumnBatch<DeviceColumn> run(Program program, ColumnBatch<DeviceColumn> input,
      ArenaPool pool, GpuStream stream) {
    long started = System.nanoTime();
    try {
      return evaluate(program, input, pool);
    } finally {
      lastKernelNanos = System.nanoTime() - started;
    }
  }

  private ColumnBatch<DeviceColumn> evaluate(Program program, ColumnBatch<DeviceColumn> input,
      ArenaPool pool) {
    int rows = input.rowCount();
    List<OutputWriter> writers = new ArrayList<>();
    try (DeviceBuffer strings = DeviceBuffer.allocate(pool, program.strings().length)) {
      if (program.strings().length > 0) {
        MemoryUtil.copyToMemory(program.strings(), 0, strings.address(), program.strings().length);
      }
      HostInterpreter interpreter = new HostInterpreter(program, input.columns(),
          strings.address());
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
    final int[] lengths;
    final boolean[] valid;
    long stringBytes;

    OutputWriter(Program.Output output, int capacity) {
      this.output = output;
      this.values = new long[capacity];
      this.lengths = output.type().isString() ? new int[capacity] : null;
      this.valid = new boolean[capacity];
    }

    void collect(HostInterpreter interpreter, int index) {
      int r = output.register();
      valid[index] = interpreter.isValid(r);
      values[index] = interpreter.value(r);
      if (lengths != null) {
        lengths[index] = valid[index] ? interpreter.length(r) : 0;
        stringBytes += lengths[index];
      }
    }

    DeviceColumn finish(int rows, ArenaPool pool) {
      ColumnType type = output.type();
      int nulls = 0;
      List<DeviceBuffer> owned = new ArrayList<>(3);
      try {
        DeviceBuffer validity = DeviceBuffer.allocate(pool, Validity.bytesFor(rows));
        owned.add(validity);
        MemoryUtil.setMemory(validity.address(), validity.size(), (byte) 0);
        for (int i = 0; i < rows; i++) {
          if (valid[i]) {
            long at = validity.address() + (i >>> 3);
            MemoryUtil.putByte(at, (byte) (MemoryUtil.getByte(at) | (1 << (i & 7))));
          } else {
            nulls++;
          }
        }
        DeviceBuffer data;
        DeviceBuffer offsets = null;
        long dataBytes;
        if (type.isString()) {
          if (stringBytes > Integer.MAX_VALUE) {
            throw new IllegalStateException("a string column holds at most 2 GiB of text");
          }
          dataBytes = stringBytes;
          data = DeviceBuffer.allocate(pool, dataBytes);
          owned.add(data);
          offsets = DeviceBuffer.allocate(pool, 4L * (rows + 1));
          owned.add(offsets);
          int position = 0;
          for (int i = 0; i < rows; i++) {
            MemoryUtil.putInt(offsets.address() + 4L * i, position);
            MemoryUtil.copyMemory(values[i], data.address() + position, lengths[i]);
            position += lengths[i];
          }
          MemoryUtil.putInt(offsets.address() + 4L * rows, position);
        } else {
          dataBytes = type.fixedDataBytes(rows);
          data = DeviceBuffer.allocate(pool, dataBytes);
          owned.add(data);
          int width = type.id().width();
          for (int i = 0; i < rows; i++) {
            long at = data.address() + (long) i * width;
            long v = valid[i] ? values[i] : 0;
            switch (width) {
              case 1 -> MemoryUtil.putByte(at, (byte) v);
              case 2 -> MemoryUtil.putShort(at, (short) v);
              case 4 -> MemoryUtil.putInt(at, (int) v);
              default -> MemoryUtil.putLong(at, v);
            }
          }
        }
        if (nulls == 0) {
          owned.remove(validity);
          validity.close();
          validity = null;
        }
        return new DeviceColumn(type, rows, nulls, data, validity, offsets, dataBytes);
      } catch (RuntimeException e) {
        owned.forEach(DeviceBuffer::close);
        throw e;
      }
    }
  }
}
