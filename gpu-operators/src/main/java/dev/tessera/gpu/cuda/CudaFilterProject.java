package dev.tessera.gpu.cuda;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.codegen.FilterProjectGenerator;
import dev.tessera.gpu.codegen.InputSpec;
import dev.tessera.gpu.codegen.ProgramWords;
import dev.tessera.gpu.join.JoinTable;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.Validity;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.RowError;
import dev.tessera.gpu.expr.RowErrorException;
import dev.tessera.gpu.kernels.ProgramKernel;
import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.memory.DeviceBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;

/**
 * {@link ProgramKernel} on CUDA: native-kernels/kernels/filter_project.cu, with the program
 * interpreter of native-kernels/include/tessera/program.cuh. Produces exactly what
 * {@code HostFilterProject} produces.
 *
 * <p>One call, for a batch of {@code rows > 0} rows:
 * <ol>
 *   <li>The output buffers are allocated for the worst case (every row kept): values, a zeroed
 *       validity bitmap, and for strings rows + 1 offsets. One temporary "work" buffer holds the
 *       status the host reads back, the look-back tile states and, per string output, each kept
 *       row's length and source address.
 *   <li>The input and output descriptors, the code, the constants and the string pool are packed
 *       into one pinned staging buffer and copied to one device buffer (the "plan").
 *   <li>{@value #FILTER_PROJECT_KERNEL} evaluates, filters and writes the fixed-width outputs;
 *       per string output {@value #STRING_OFFSETS_KERNEL} turns the lengths into offsets.
 *   <li>The status comes back in one small copy and one synchronize: the first error row (then
 *       a {@link RowErrorException} and every output is discarded), the kept row count, the null
 *       counts and the string byte counts.
 *   <li>String data buffers are allocated at their exact size and filled by
 *       {@value #STRING_GATHER_KERNEL}; a last synchronize, and the temporaries are freed.
 * </ol>
 */
final class CudaFilterProject implements ProgramKernel {
  static final String FILTER_PROJECT_KERNEL = "tessera_filter_project";
  static final String STRING_OFFSETS_KERNEL = "tessera_string_offsets";
  static final String STRING_GATHER_KERNEL = "tessera_string_gather";

  // ---- layouts shared with the kernels (ProgramAbiTest checks them against the CUDA sources) ----
  /** filter_project.cu struct OutputColumn: data, validity, lengths, sources, reg, type. */
  static final int OUTPUT_COLUMN_BYTES = 40;
  private static final int OUTPUT_DATA = 0;
  private static final int OUTPUT_VALIDITY = 8;
  private static final int OUTPUT_STRING_LENGTHS = 16;
  private static final int OUTPUT_STRING_SOURCES = 24;
  private static final int OUTPUT_REGISTER = 32;
  private static final int OUTPUT_TYPE = 36;
  /** filter_project.cu struct StatusHeader: first_error, kept_rows, tile_counter, reserved. */
  static final int STATUS_HEADER_BYTES = 32;
  private static final int STATUS_FIRST_ERROR = 0;
  private static final int STATUS_KEPT_ROWS = 8;
  /** filter_project.cu struct OutputStatus: null_count, string_bytes, string_tile_counter. */
  static final int OUTPUT_STATUS_BYTES = 32;
  private static final int STATUS_NULL_COUNT = 0;
  private static final int STATUS_STRING_BYTES = 8;
  private static final int STATUS_STRING_TILE_COUNTER = 16;
  /** An error is (row << ERROR_ROW_SHIFT) | code, all ones when there is none (kNoError). */
  static final int ERROR_ROW_SHIFT = 8;
  private static final long ERROR_CODE_MASK = (1L << ERROR_ROW_SHIFT) - 1;
  private static final long NO_ERROR = -1L;
  private static final byte ALL_ONES = (byte) 0xff;
  /** lookback.cuh: one 64-bit status word per tile. */
  private static final int TILE_STATUS_BYTES = Long.BYTES;
  /** Offsets of a string column are int32 (Arrow's layout, HostColumn's). */
  private static final long MAX_STRING_BYTES = Integer.MAX_VALUE;

  private final CudaDevice device;
  private final BufferAllocator staging;
  private final boolean codegen;

  CudaFilterProject(CudaBackend backend) {
    this.device = backend.device();
    this.staging = backend.stagingAllocator();
    this.codegen = backend.codegen();
  }

  private long lastKernelNanos;
  private long lastCompileNanos;

  @Override
  public long lastKernelNanos() {
    return lastKernelNanos;
  }

  @Override
  public long lastCompileNanos() {
    return lastCompileNanos;
  }

  @Override
  public ColumnBatch<DeviceColumn> run(Program program, List<JoinTable> tables,
      ColumnBatch<DeviceColumn> input, ArenaPool pool, GpuStream stream) {
    CudaStream cuda = CudaBackend.cudaStream(stream);
    ProgramChecks.checkInputs(program, input);
    ProgramChecks.check(program);
    ProgramChecks.checkTables(program, tables);
    if (input.rowCount() == 0) {
      return emptyResult(program, pool, cuda);
    }
    return new Execution(program, tables, input, pool, cuda).run();
  }

  /** No rows: empty columns as HostFilterProject makes them, without a launch. */
  private static ColumnBatch<DeviceColumn> emptyResult(Program program, ArenaPool pool,
      CudaStream stream) {
    List<DeviceColumn> columns = new ArrayList<>(program.outputs().size());
    try {
      for (Program.Output output : program.outputs()) {
        ColumnType type = output.type();
        DeviceBuffer data = DeviceBuffer.allocate(pool, 0);
        DeviceBuffer offsets = null;
        if (type.isString()) {
          try {
            offsets = DeviceBuffer.allocate(pool, Integer.BYTES);
          } catch (RuntimeException e) {
            data.close();
            throw e;
          }
        }
        columns.add(new DeviceColumn(type, 0, 0, data, null, offsets, 0));
        if (offsets != null) {
          stream.fill(offsets.address(), Integer.BYTES, (byte) 0); // the one offset: 0
        }
      }
      stream.synchronize();
      return new ColumnBatch<>(columns, 0);
    } catch (RuntimeException | Error e) {
      for (DeviceColumn column : columns) {
        try {
          column.close();
        } catch (RuntimeException suppressed) {
          e.addSuppressed(suppressed);
        }
      }
      throw e;
    }
  }

  /** One run over a non-empty batch; owns every buffer it allocates until it hands them over. */
  private final class Execution {
    private final Program program;
    private final List<JoinTable> tables;
    private final ColumnBatch<DeviceColumn> input;
    private final ArenaPool pool;
    private final CudaStream stream;
    private final int rows;
    private final LaunchShape tileGrid;
    private final List<Program.Output> outputs;

    // Output buffers: handed to the result's columns, or closed on failure.
    private final DeviceBuffer[] data;
    private final DeviceBuffer[] validity;
    private final DeviceBuffer[] offsets;
    // Closed before run() returns, whatever happens.
    private final List<AutoCloseable> temporaries = new ArrayList<>();
    /** Whether work may be queued on the stream that reads or writes our buffers. */
    private boolean queued;

    Execution(Program program, List<JoinTable> tables, ColumnBatch<DeviceColumn> input,
        ArenaPool pool, CudaStream stream) {
      this.program = program;
      this.tables = tables;
      this.input = input;
      this.pool = pool;
      this.stream = stream;
      this.rows = input.rowCount();
      this.tileGrid = LaunchShape.tilesFor(rows);
      this.outputs = program.outputs();
      this.data = new DeviceBuffer[outputs.size()];
      this.validity = new DeviceBuffer[outputs.size()];
      this.offsets = new DeviceBuffer[outputs.size()];
    }

    ColumnBatch<DeviceColumn> run() {
      ColumnBatch<DeviceColumn> result;
      try {
        result = execute();
      } catch (RuntimeException | Error e) {
        abandonOutputs(e);
        closeTemporaries(e);
        throw e;
      }
      try {
        closeTemporaries(null);
      } catch (RuntimeException e) {
        try {
          result.close();
        } catch (RuntimeException suppressed) {
          e.addSuppressed(suppressed);
        }
        throw e;
      }
      return result;
    }

    private ColumnBatch<DeviceColumn> execute() {
      int outputCount = outputs.size();
      int tiles = tileGrid.gridBlocks();

      // Outputs, sized for every row kept (string data waits for its exact size).
      for (int o = 0; o < outputCount; o++) {
        ColumnType type = outputs.get(o).type();
        validity[o] = DeviceBuffer.allocate(pool, Validity.bytesFor(rows));
        if (type.isString()) {
          offsets[o] = DeviceBuffer.allocate(pool, Integer.BYTES * (rows + 1L));
        } else {
          data[o] = DeviceBuffer.allocate(pool, type.fixedDataBytes(rows));
        }
      }

      // The plan: everything the kernel reads that the host writes.
      Sections plan = new Sections();
      ProgramPlan programPlan = new ProgramPlan(plan, program, input, tables);
      long outputsAt = plan.add((long) OUTPUT_COLUMN_BYTES * outputCount);
      // The work buffer: status and tile states (zeroed), then the string temporaries.
      Sections work = new Sections();
      long statusBytes = STATUS_HEADER_BYTES + (long) OUTPUT_STATUS_BYTES * outputCount;
      long statusAt = work.add(statusBytes);
      long tileStatusAt = work.add((long) TILE_STATUS_BYTES * tiles);
      long[] stringTileStatusAt = new long[outputCount];
      for (int o = 0; o < outputCount; o++) {
        if (outputs.get(o).type().isString()) {
          stringTileStatusAt[o] = work.add((long) TILE_STATUS_BYTES * tiles);
        }
      }
      long zeroedBytes = work.size();
      long[] lengthsAt = new long[outputCount];
      long[] sourcesAt = new long[outputCount];
      for (int o = 0; o < outputCount; o++) {
        if (outputs.get(o).type().isString()) {
          lengthsAt[o] = work.add((long) Integer.BYTES * rows);
          sourcesAt[o] = work.add((long) Long.BYTES * rows);
        }
      }
      DeviceBuffer planBuffer = temporary(DeviceBuffer.allocate(pool, plan.size()));
      DeviceBuffer workBuffer = temporary(DeviceBuffer.allocate(pool, work.size()));
      long planAddress = planBuffer.address();
      long workAddress = workBuffer.address();
      long statusAddress = workAddress + statusAt;
      long outputStatusAddress = statusAddress + STATUS_HEADER_BYTES;

      // Staging: the plan, then room for the status read back.
      long readbackAt = Sections.alignUp(plan.size());
      ArrowBuf host = temporary(staging.buffer(readbackAt + statusBytes));
      DeviceTimer timer = temporary(new DeviceTimer(device));
      programPlan.write(host);
      for (int o = 0; o < outputCount; o++) {
        Program.Output output = outputs.get(o);
        boolean string = output.type().isString();
        long at = outputsAt + (long) OUTPUT_COLUMN_BYTES * o;
        host.setLong(at + OUTPUT_DATA, string ? 0 : data[o].address());
        host.setLong(at + OUTPUT_VALIDITY, validity[o].address());
        host.setLong(at + OUTPUT_STRING_LENGTHS, string ? workAddress + lengthsAt[o] : 0);
        host.setLong(at + OUTPUT_STRING_SOURCES, string ? workAddress + sourcesAt[o] : 0);
        host.setInt(at + OUTPUT_REGISTER, output.register());
        host.setInt(at + OUTPUT_TYPE, output.type().id().ordinal());
      }

      // Phase 1 and the string offsets, then the status back.
      queued = true;
      stream.copyHostToDevice(host.memoryAddress(), planAddress, plan.size());
      stream.fill(workAddress, zeroedBytes, (byte) 0);
      stream.fill(statusAddress + STATUS_FIRST_ERROR, Long.BYTES, ALL_ONES);
      for (int o = 0; o < outputCount; o++) {
        stream.fill(validity[o].address(), validity[o].size(), (byte) 0);
      }
      KernelModule kernels = device.kernels();
      // The generated kernel where there is one: the same arguments, the same results.
      List<InputSpec> layouts = input.columns().stream().map(InputSpec::of).toList();
      GeneratedKernels.Lookup lookup =
          codegen ? device.generated().filterProject(program, layouts) : null;
      GeneratedKernels.Kernel generated = lookup == null ? null : lookup.kernel();
      lastCompileNanos = lookup == null ? 0 : lookup.buildNanos();
      lastKernelNanos = 0;
      timer.start(stream);
      KernelArgs phase1 = programPlan.arguments(planAddress)
          .address(planAddress + outputsAt)
          .i32(outputCount)
          .i32(program.filterRegister())
          .i32(program.ansi() ? 1 : 0)
          .i32(rows)
          .address(statusAddress)
          .address(outputStatusAddress)
          .address(workAddress + tileStatusAt);
      if (generated != null && generated.generated()) {
        // The generated kernel's tiles (no smaller than the interpreter's: the states fit).
        LaunchShape generatedGrid =
            LaunchShape.tilesFor(rows, FilterProjectGenerator.tileItems(program, layouts));
        ProgramWords words = FilterProjectGenerator.programWords(program, layouts);
        if (words != null) {
          phase1.words(programPlan.words(host, words));
        }
        kernels.launch(generated.function(), generated.entry(), generatedGrid, stream, phase1);
      } else {
        kernels.launch(FILTER_PROJECT_KERNEL, tileGrid, stream, phase1);
      }
      for (int o = 0; o < outputCount; o++) {
        if (outputs.get(o).type().isString()) {
          long outputStatus = outputStatusAddress + (long) OUTPUT_STATUS_BYTES * o;
          kernels.launch(STRING_OFFSETS_KERNEL, tileGrid, stream, new KernelArgs()
              .address(workAddress + lengthsAt[o])
              .address(offsets[o].address())
              .address(statusAddress + STATUS_KEPT_ROWS)
              .address(outputStatus + STATUS_STRING_TILE_COUNTER)
              .address(workAddress + stringTileStatusAt[o])
              .address(outputStatus + STATUS_STRING_BYTES));
        }
      }
      timer.recordStop(stream);
      stream.copyDeviceToHost(statusAddress, host.memoryAddress() + readbackAt, statusBytes);
      stream.synchronize();
      queued = false;
      lastKernelNanos += millisToNanos(timer.elapsedMillis());

      long firstError = host.getLong(readbackAt + STATUS_FIRST_ERROR);
      if (firstError != NO_ERROR) {
        throw new RowErrorException(RowError.ofCode((int) (firstError & ERROR_CODE_MASK)),
            firstError >>> ERROR_ROW_SHIFT);
      }
      int kept = statusCount("kept rows", host.getLong(readbackAt + STATUS_KEPT_ROWS), rows);
      int[] nulls = new int[outputCount];
      long[] stringBytes = new long[outputCount];
      for (int o = 0; o < outputCount; o++) {
        long at = readbackAt + STATUS_HEADER_BYTES + (long) OUTPUT_STATUS_BYTES * o;
        nulls[o] = statusCount("nulls of output " + o, host.getLong(at + STATUS_NULL_COUNT), kept);
        if (outputs.get(o).type().isString()) {
          stringBytes[o] = host.getLong(at + STATUS_STRING_BYTES);
          if (stringBytes[o] < 0 || stringBytes[o] > MAX_STRING_BYTES) {
            // HostFilterProject's limit and message (a negative count would be a kernel bug).
            throw new IllegalStateException("a string column holds at most 2 GiB of text");
          }
        }
      }

      // Phase 2b: string bytes into buffers of their exact size.
      for (int o = 0; o < outputCount; o++) {
        if (outputs.get(o).type().isString()) {
          data[o] = DeviceBuffer.allocate(pool, stringBytes[o]);
          if (kept > 0 && stringBytes[o] > 0) {
            queued = true;
            timer.start(stream);
            kernels.launch(STRING_GATHER_KERNEL, LaunchShape.tilesFor(kept), stream,
                new KernelArgs()
                    .address(offsets[o].address())
                    .address(workAddress + sourcesAt[o])
                    .address(data[o].address())
                    .i32(kept));
            lastKernelNanos += millisToNanos(timer.stopMillis(stream));
          }
        }
      }
      if (queued) {
        stream.synchronize();
        queued = false;
      }

      List<DeviceColumn> columns = new ArrayList<>(outputCount);
      for (int o = 0; o < outputCount; o++) {
        ColumnType type = outputs.get(o).type();
        if (nulls[o] == 0) {
          // No nulls, no bitmap, as HostFilterProject.
          DeviceBuffer unused = validity[o];
          validity[o] = null;
          unused.close();
        }
        long dataBytes = type.isString() ? stringBytes[o] : type.fixedDataBytes(kept);
        columns.add(new DeviceColumn(type, kept, nulls[o], data[o], validity[o], offsets[o],
            dataBytes));
      }
      return new ColumnBatch<>(columns, kept);
    }

    /** A count the kernel reported, checked to lie in [0, limit]. */
    private int statusCount(String what, long value, long limit) {
      if (value < 0 || value > limit) {
        throw new IllegalStateException(FILTER_PROJECT_KERNEL + " reported " + value + " " + what
            + ", outside [0, " + limit + "]: a kernel bug");
      }
      return (int) value;
    }

    private <T extends AutoCloseable> T temporary(T resource) {
      temporaries.add(resource);
      return resource;
    }

    /**
     * After a failure: waits for queued work that may still use our buffers (its own error is
     * added to {@code failure}), then closes every output buffer.
     */
    private void abandonOutputs(Throwable failure) {
      if (queued) {
        try {
          stream.synchronize();
        } catch (RuntimeException e) {
          failure.addSuppressed(e);
        }
        queued = false;
      }
      for (DeviceBuffer[] buffers : List.of(data, validity, offsets)) {
        for (int o = 0; o < buffers.length; o++) {
          if (buffers[o] != null) {
            try {
              buffers[o].close();
            } catch (RuntimeException e) {
              failure.addSuppressed(e);
            }
            buffers[o] = null;
          }
        }
      }
    }

    private void closeTemporaries(Throwable failure) {
      Closing.closeAll(temporaries, failure);
    }
  }

  private static long millisToNanos(float millis) {
    return (long) (millis * 1_000_000.0);
  }
}
