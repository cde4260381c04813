package dev.tessera.gpu.bench;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.agg.HashAggregateKernel;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.HostColumnBuilder;
import dev.tessera.gpu.expr.Comparison;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import dev.tessera.gpu.join.JoinTable;
import dev.tessera.gpu.join.JoinTableSchema;
import dev.tessera.gpu.kernels.ProgramKernel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Benchmark (not a test) of a broadcast join on a string key over one batch of a fact table of
 * (lo_suppname STRING, lo_revenue INT), against a supplier table of 20,000 rows keyed by name
 * ("Supplier#000012345", 18 bytes, as SSB's s_name) with s_region uniform in 0..4:
 * <pre>
 * SELECT s_region, sum(lo_revenue) FROM fact JOIN supplier ON lo_suppname = s_name
 * WHERE s_region = 1 GROUP BY s_region
 * </pre>
 * in two forms: "fused" (the probe, the filter and the aggregation's update in one kernel per
 * batch, then finish) and "probe + filter only" (the filter/project operator writing the kept
 * (s_region, lo_revenue) rows). One fact row in 16 names no supplier (a name past the table's).
 * A string key's probe hashes the key's bytes and compares them at the walk: with the fourth
 * argument "codegen" the pipelines run as generated kernels (without it, the interpreter
 * kernel probes). Prints the median wall time over the runs (timed as StarJoinBench times its
 * forms) and the bandwidth floor: the fact columns read once (the name's 4-byte offset and 18
 * bytes, the revenue's 4: 26 bytes a row) over the device bandwidth given as the second
 * argument (GB/s, measured by the diagnostic); the supplier table (under 1 MB) is taken as
 * cache-resident.
 *
 * <pre>run-bench.sh dev.tessera.gpu.bench.StringJoinBench [rows] [deviceGBps] [backend] [codegen]
 * </pre>
 */
public final class StringJoinBench {
  private static final int HOST_WARM_UP_ROWS = 4_096;
  private static final ColumnType INT = ColumnType.INT;
  private static final ColumnType LONG = ColumnType.LONG;
  private static final ColumnType STRING = ColumnType.STRING;

  private static final int SUPPLIER_ROWS = 20_000;
  private static final int REGIONS = 5;
  private static final int WANTED_REGION = 1;
  /** Bytes a fact row reads: the name's offset and bytes, the revenue. */
  private static final int FACT_ROW_BYTES = Integer.BYTES + 18 + Integer.BYTES;

  /** supplier: s_name -> s_region. */
  private static final JoinTableSchema SUPPLIER =
      new JoinTableSchema(List.of(STRING), List.of(INT));
  /** The aggregation's input (s_region, lo_revenue): sum(lo_revenue) by the first. */
  private static final AggregateSpec SPEC = new AggregateSpec(List.of(INT, INT), 1,
      List.of(new AggregateFunction(Kind.SUM, 1, LONG)), false);

  private StringJoinBench() {}

  public static void main(String[] args) {
    BenchArgs run = BenchArgs.parse(args, 32 << 20);
    int rows = run.rows();
    try (Backend backend = Backends.open(run.backend(), run.options(16L << 30, 4L << 30));
        GpuStream stream = backend.newStream()) {
      System.out.println("string join benchmark on " + backend.description() + ", " + rows
          + " fact rows (supplier " + SUPPLIER_ROWS + " rows, keyed by name)"
          + (run.codegen() ? ", generated kernels" : ", interpreter kernels"));
      try (JoinTable supplier = buildSupplier(backend, stream);
          ColumnBatch<DeviceColumn> fact = uploadFact(backend, stream, rows);
          ColumnBatch<DeviceColumn> small = uploadFact(backend, stream, HOST_WARM_UP_ROWS)) {
        List<JoinTable> tables = List.of(supplier);
        Program program = program();
        ProgramKernel filterProject = backend.programKernel();
        HashAggregateKernel aggregate = backend.hashAggregateKernel();
        long bytes = (long) FACT_ROW_BYTES * rows;
        double floor = bytes / (run.deviceGBps() * 1e9) * 1e3;
        System.out.printf("floor: the fact columns read once, %,d bytes at %.0f GB/s = %.4f ms"
            + " (the supplier table taken as cache-resident)%n", bytes, run.deviceGBps(), floor);
        System.out.println("form                   out rows   median ms   G rows/s   x floor");
        StarJoinBench.measure("fused", rows, floor, input -> {
          try (HashAggregateKernel.Aggregation a =
              aggregate.open(SPEC, backend.deviceMemory(), stream)) {
            a.update(program, tables, input);
            try (ColumnBatch<DeviceColumn> out = a.finish()) {
              return out.rowCount();
            }
          }
        }, fact, small);
        StarJoinBench.measure("probe + filter only", rows, floor, input -> {
          try (ColumnBatch<DeviceColumn> out =
              filterProject.run(program, tables, input, backend.deviceMemory(), stream)) {
            return out.rowCount();
          }
        }, fact, small);
      }
    }
  }

  /**
   * Over (lo_suppname, lo_revenue) with supplier: the probe by name and s_region = 1, outputs
   * (s_region, lo_revenue). A name without a supplier gives a NULL region, which the filter drops.
   */
  private static Program program() {
    ProgramBuilder b = new ProgramBuilder(List.of(STRING, INT), false);
    int supplier = b.table(SUPPLIER);
    int row = b.emitNew(Opcode.PROBE, supplier, b.constant(b.loadColumn(0)), 1);
    int region = b.emitNew(Opcode.LOAD_BUILD, supplier, row, 0);
    int keep = b.emitNew(Opcode.CMP_INT, region, b.loadConstant(WANTED_REGION),
        Comparison.EQ.code());
    return b.build(keep, List.of(new Program.Output(region, INT),
        new Program.Output(b.loadColumn(1), INT)));
  }

  /** SSB's s_name of supplier {@code key}: "Supplier#" and the key in 9 digits. */
  private static byte[] name(int key) {
    return String.format("Supplier#%09d", key).getBytes(StandardCharsets.US_ASCII);
  }

  /** supplier: s_name of keys 1..20,000, s_region uniform in 0..4. */
  private static JoinTable buildSupplier(Backend backend, GpuStream stream) {
    Random random = new Random(3);
    List<HostColumn> host = new ArrayList<>();
    try (HostColumnBuilder names =
            new HostColumnBuilder(STRING, SUPPLIER_ROWS, backend.stagingAllocator());
        HostColumnBuilder regions =
            new HostColumnBuilder(INT, SUPPLIER_ROWS, backend.stagingAllocator())) {
      for (int i = 1; i <= SUPPLIER_ROWS; i++) {
        names.appendUtf8(name(i));
        regions.appendInt(random.nextInt(REGIONS));
      }
      host.add(names.build());
      host.add(regions.build());
    } catch (RuntimeException e) {
      host.forEach(HostColumn::close);
      throw e;
    }
    try (ColumnBatch<DeviceColumn> batch =
        StarJoinBench.toDevice(host, SUPPLIER_ROWS, backend, stream)) {
      return backend.hashJoinKernel().build(SUPPLIER, batch, backend.deviceMemory(), stream);
    }
  }

  /**
   * The fact batch: names uniform over the suppliers' and 1 in 16 past them (no supplier),
   * lo_revenue in 0 .. 10^7.
   */
  private static ColumnBatch<DeviceColumn> uploadFact(Backend backend, GpuStream stream,
      int rows) {
    Random random = new Random(1);
    byte[][] names = new byte[SUPPLIER_ROWS * 17 / 16 + 1][];
    for (int k = 1; k < names.length; k++) {
      names[k] = name(k);
    }
    List<HostColumn> host = new ArrayList<>();
    try (HostColumnBuilder keys = new HostColumnBuilder(STRING, rows, backend.stagingAllocator());
        HostColumnBuilder revenue =
            new HostColumnBuilder(INT, rows, backend.stagingAllocator())) {
      for (int i = 0; i < rows; i++) {
        keys.appendUtf8(names[1 + random.nextInt(names.length - 1)]);
        revenue.appendInt(random.nextInt(10_000_000));
      }
      host.add(keys.build());
      host.add(revenue.build());
    } catch (RuntimeException e) {
      host.forEach(HostColumn::close);
      throw e;
    }
    return StarJoinBench.toDevice(host, rows, backend, stream);
  }
}
