package dev.tessera.gpu.cuda;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.TypeId;
import dev.tessera.gpu.memory.DeviceBuffer;
import org.apache.arrow.memory.ArrowBuf;

/**
 * Runs native-kernels/kernels/column_sum.cu: the wrapping 64-bit sum of the non-null values of one
 * INT or LONG device column (plain, GPU-FOR or GPU-DFOR), read through the loads the query kernels
 * use. It is a probe of those decoders for {@code CudaColumnSumTest} and
 * {@code GpuForDecodeBench}, not an operator.
 *
 * <p>The column's InputColumn is written once, by {@link ProgramPlan#writeInputColumn} (the one
 * writer of that layout), and stays on the device with the total; each {@link #run} zeroes the
 * total, launches, and reads it back. The column must stay open while this is.
 */
public final class CudaColumnSum implements AutoCloseable {
  static final String KERNEL = "tessera_column_sum";

  /** The sum of one run and the kernel's time between two device events. */
  public record Result(long sum, double millis) {}

  private final CudaDevice device;
  private final CudaStream stream;
  private final int rows;
  /** The InputColumn, then the total. */
  private final DeviceBuffer plan;
  private final long columnAt;
  private final long totalAt;
  /** The staging copy of the InputColumn, then room for the total read back. */
  private final ArrowBuf host;
  private final DeviceTimer timer;

  private CudaColumnSum(CudaDevice device, CudaStream stream, int rows, DeviceBuffer plan,
      long columnAt, long totalAt, ArrowBuf host, DeviceTimer timer) {
    this.device = device;
    this.stream = stream;
    this.rows = rows;
    this.plan = plan;
    this.columnAt = columnAt;
    this.totalAt = totalAt;
    this.host = host;
    this.timer = timer;
  }

  /**
   * Prepares sums of {@code column} on {@code stream}, both of the CUDA {@code backend}.
   *
   * @throws IllegalArgumentException if the column is neither INT nor LONG
   */
  public static CudaColumnSum of(Backend backend, DeviceColumn column, GpuStream stream) {
    TypeId type = column.type().id();
    if (type != TypeId.INT && type != TypeId.LONG) {
      throw new IllegalArgumentException("sums INT and LONG columns, not " + column.type());
    }
    if (!(backend instanceof CudaBackend cuda)) {
      throw new IllegalArgumentException("a CUDA kernel needs the CUDA backend, got "
          + backend.kind());
    }
    CudaStream cudaStream = CudaBackend.cudaStream(stream);
    Sections sections = new Sections();
    long columnAt = sections.add(ProgramPlan.INPUT_COLUMN_BYTES);
    long totalAt = sections.add(Long.BYTES);
    DeviceBuffer plan = DeviceBuffer.allocate(backend.deviceMemory(), sections.size());
    ArrowBuf host = null;
    DeviceTimer timer = null;
    try {
      host = backend.stagingAllocator().buffer(sections.size());
      ProgramPlan.writeInputColumn(host, columnAt, column);
      cudaStream.copyHostToDevice(host.memoryAddress() + columnAt, plan.address() + columnAt,
          ProgramPlan.INPUT_COLUMN_BYTES);
      cudaStream.synchronize();  // the staging copy is reused for the read-back
      timer = new DeviceTimer(cuda.device());
      return new CudaColumnSum(cuda.device(), cudaStream, column.rowCount(), plan, columnAt,
          totalAt, host, timer);
    } catch (RuntimeException | Error e) {
      if (timer != null) {
        timer.close();
      }
      if (host != null) {
        host.close();
      }
      plan.close();
      throw e;
    }
  }

  /** One launch, waited for: the total and the kernel's device time. */
  public Result run() {
    long total = plan.address() + totalAt;
    stream.fill(total, Long.BYTES, (byte) 0);
    timer.start(stream);
    if (rows > 0) {
      device.kernels().launch(KERNEL, LaunchShape.tilesFor(rows), stream,
          new KernelArgs().address(plan.address() + columnAt).i64(rows).address(total));
    }
    timer.recordStop(stream);
    stream.copyDeviceToHost(total, host.memoryAddress() + totalAt, Long.BYTES);
    stream.synchronize();
    return new Result(host.getLong(totalAt), timer.elapsedMillis());
  }

  @Override
  public void close() {
    timer.close();
    host.close();
    plan.close();
  }
}
