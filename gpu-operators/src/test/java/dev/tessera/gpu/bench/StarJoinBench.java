package dev.tessera.gpu.bench;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.agg.HashAggregateKernel;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
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
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * Benchmark (not a test) of an SSB-Q2.1/Q3.1-like star join over one batch of a fact table of
 * int32 columns (lo_partkey, lo_suppkey, lo_orderdate, lo_revenue) and three dimension tables
 * with unique keys: part (200,000 rows: p_partkey, p_brand, p_category), supplier (20,000 rows:
 * s_suppkey, s_region) and date (2,556 rows: d_datekey as yyyymmdd from 19920101, d_year):
 * <pre>
 * SELECT d_year, p_brand, sum(lo_revenue) FROM fact JOIN part JOIN supplier JOIN date
 * WHERE p_category = 1 (1 of 25) AND s_region = 1 (1 of 5) GROUP BY d_year, p_brand
 * </pre>
 * in three forms:
 * <ul>
 *   <li>"fused": one program (probe part, filter category, probe supplier, filter region, probe
 *       date, outputs d_year, p_brand, lo_revenue) fed to the aggregation's update with the three
 *       join tables, then finish: one kernel per batch for everything;
 *   <li>"probe + filter only": the filter/project operator running the same program, writing the
 *       (d_year, p_brand, lo_revenue) rows (no aggregate);
 *   <li>"unfused": three filter/project runs (one probe and filter each, materialising the
 *       intermediate batches), then the aggregation of the last batch: what a plan of separate
 *       join nodes does.
 * </ul>
 * Prints the median wall time over the runs (each form synchronizes at its end; the join tables
 * are built once, outside the timing, and their build time is printed separately; each form first
 * runs 2,000 times over a small fact batch, so that the host's part is timed compiled) and the
 * bandwidth floor: the four fact columns read once (16 bytes per row) over the device bandwidth
 * given as the second argument (GB/s, measured by the diagnostic). The dimension tables (a few
 * MB) are taken to be cache-resident, so their reads are not in the floor, nor are the few
 * output rows (1 in 125 fact rows pass the filters).
 *
 * <p>With a fifth argument "sparse", the part and supplier tables hold only the rows their filters
 * keep (as Spark's filters pushed below a broadcast make them: 1 in 25 and 1 in 5) and their keys
 * are spread {@value #SPARSE_KEY_STRIDE} apart (as hashed or sequence-generated ids are): they get
 * no direct map, and most probes find no row: their probe filters (CudaHashJoin's ProbeFilter)
 * end most probes, and the rest walk the hash table's slots to an empty one. The filters in the
 * programs still hold for every build row; the results are the same. In the dense form the part
 * and supplier tables' rows are their keys in order, so their direct maps are the identity and
 * generated probes do not read them.
 *
 * <pre>run-bench.sh dev.tessera.gpu.bench.StarJoinBench [rows] [deviceGBps] [backend] [codegen]
 * [sparse]</pre>
 */
public final class StarJoinBench {
  private static final int WARM_UP = 1;
  private static final int RUNS = 5;
  private static final int HOST_WARM_UP = 2_000;
  private static final int HOST_WARM_UP_ROWS = 4_096;
  private static final ColumnType INT = ColumnType.INT;
  private static final ColumnType LONG = ColumnType.LONG;

  private static final int PART_ROWS = 200_000;
  private static final int SUPPLIER_ROWS = 20_000;
  private static final int DATE_ROWS = 2_556;
  private static final int CATEGORIES = 25;
  private static final int BRANDS_PER_CATEGORY = 40;
  private static final int REGIONS = 5;
  private static final int WANTED_CATEGORY = 1;
  private static final int WANTED_REGION = 1;
  /** The "sparse" form's distance between consecutive part and supplier keys. */
  private static final int SPARSE_KEY_STRIDE = 9_973;

  /** part: p_partkey -> p_brand, p_category. */
  private static final JoinTableSchema PART = new JoinTableSchema(List.of(INT), List.of(INT, INT));
  /** supplier: s_suppkey -> s_region. */
  private static final JoinTableSchema SUPPLIER = new JoinTableSchema(List.of(INT), List.of(INT));
  /** date: d_datekey -> d_year. */
  private static final JoinTableSchema DATE = new JoinTableSchema(List.of(INT), List.of(INT));

  /** The aggregation's input (d_year, p_brand, lo_revenue): sum(lo_revenue) by the first two. */
  private static final AggregateSpec SPEC = new AggregateSpec(List.of(INT, INT, INT), 2,
      List.of(new AggregateFunction(Kind.SUM, 2, LONG)), false);

  private StarJoinBench() {}

  /** One way of running the query over the fact batch; returns the output's row count. */
  interface Form {
    long run(ColumnBatch<DeviceColumn> fact);
  }

  public static void main(String[] args) {
    BenchArgs run = BenchArgs.parse(args, 32 << 20);
    int rows = run.rows();
    boolean sparse = args.length > 4 && args[4].equals("sparse");
    int stride = sparse ? SPARSE_KEY_STRIDE : 1;
    try (Backend backend = Backends.open(run.backend(), run.options(16L << 30, 4L << 30));
        GpuStream stream = backend.newStream()) {
      System.out.println("star join benchmark on " + backend.description() + ", " + rows
          + " fact rows (part " + PART_ROWS + ", supplier " + SUPPLIER_ROWS + ", date "
          + DATE_ROWS + " rows)" + (run.codegen() ? ", generated kernels" : ", interpreter kernels")
          + (sparse ? ", part and supplier filtered, keys " + stride + " apart" : ""));
      long buildStarted = System.nanoTime();
      try (JoinTable part = buildPart(backend, stream, sparse);
          JoinTable supplier = buildSupplier(backend, stream, sparse);
          JoinTable date = buildDate(backend, stream)) {
        System.out.printf("join tables built in %.3f ms (once, not in the times below)%n",
            (System.nanoTime() - buildStarted) / 1e6);
        try (ColumnBatch<DeviceColumn> fact = uploadFact(backend, stream, rows, stride);
            ColumnBatch<DeviceColumn> small = uploadFact(backend, stream, HOST_WARM_UP_ROWS,
                stride)) {
          List<JoinTable> tables = List.of(part, supplier, date);
          Program fused = fusedProgram();
          Program[] steps = unfusedPrograms();
          ProgramKernel filterProject = backend.programKernel();
          HashAggregateKernel aggregate = backend.hashAggregateKernel();

          long bytes = 16L * rows;
          double floor = bytes / (run.deviceGBps() * 1e9) * 1e3;
          System.out.printf("floor: the 4 int32 fact columns read once, %,d bytes at %.0f GB/s ="
              + " %.4f ms (dimension tables taken as cache-resident, output rows not counted)%n",
              bytes, run.deviceGBps(), floor);
          System.out.println("form                   out rows   median ms   G rows/s   x floor");

          measure("fused", rows, floor, input -> {
            try (HashAggregateKernel.Aggregation a =
                aggregate.open(SPEC, backend.deviceMemory(), stream)) {
              a.update(fused, tables, input);
              try (ColumnBatch<DeviceColumn> out = a.finish()) {
                return out.rowCount();
              }
            }
          }, fact, small);

          measure("probe + filter only", rows, floor, input -> {
            try (ColumnBatch<DeviceColumn> out =
                filterProject.run(fused, tables, input, backend.deviceMemory(), stream)) {
              return out.rowCount();
            }
          }, fact, small);

          measure("unfused", rows, floor, input -> {
            try (ColumnBatch<DeviceColumn> afterPart = filterProject.run(steps[0],
                    List.of(part), input, backend.deviceMemory(), stream);
                ColumnBatch<DeviceColumn> afterSupplier = filterProject.run(steps[1],
                    List.of(supplier), afterPart, backend.deviceMemory(), stream);
                ColumnBatch<DeviceColumn> afterDate = filterProject.run(steps[2],
                    List.of(date), afterSupplier, backend.deviceMemory(), stream);
                HashAggregateKernel.Aggregation a =
                    aggregate.open(SPEC, backend.deviceMemory(), stream)) {
              a.update(afterDate);
              try (ColumnBatch<DeviceColumn> out = a.finish()) {
                return out.rowCount();
              }
            }
          }, fact, small);
        }
      }
    }
  }

  /**
   * Times {@code form} over {@code fact}, after running it {@value #HOST_WARM_UP} times over
   * {@code small}: the JVM then has compiled the host's part of each operator, as in an executor,
   * which runs it for every batch (the timed runs alone would time it interpreted).
   */
  static void measure(String name, int rows, double floor, Form form,
      ColumnBatch<DeviceColumn> fact, ColumnBatch<DeviceColumn> small) {
    for (int i = 0; i < HOST_WARM_UP; i++) {
      form.run(small);
    }
    double[] millis = new double[RUNS];
    long out = 0;
    for (int i = 0; i < WARM_UP + RUNS; i++) {
      long started = System.nanoTime();
      out = form.run(fact);
      if (i >= WARM_UP) {
        millis[i - WARM_UP] = (System.nanoTime() - started) / 1e6;
      }
    }
    Arrays.sort(millis);
    double median = millis[RUNS / 2];
    System.out.printf("%-20s %,10d  %10.3f  %9.2f  %8.1f%n", name, out, median,
        rows / median / 1e6, median / floor);
  }

  // ---- programs --------------------------------------------------------------------------------

  /** PROBE of {@code table} with the one key register {@code key}; returns the row register. */
  private static int probe(ProgramBuilder b, int table, int key) {
    return b.emitNew(Opcode.PROBE, table, b.constant(key), 1);
  }

  private static int equals(ProgramBuilder b, int register, int value) {
    return b.emitNew(Opcode.CMP_INT, register, b.loadConstant(value), Comparison.EQ.code());
  }

  /**
   * Over the fact columns (lo_partkey, lo_suppkey, lo_orderdate, lo_revenue) with the tables
   * (part, supplier, date): the three probes and both filters, outputs (d_year, p_brand,
   * lo_revenue). A probe without a match gives NULL payloads, and a NULL comparison or a NULL
   * date row drops the row (inner joins).
   */
  private static Program fusedProgram() {
    ProgramBuilder b = new ProgramBuilder(List.of(INT, INT, INT, INT), false);
    int part = b.table(PART);
    int supplier = b.table(SUPPLIER);
    int date = b.table(DATE);
    int partRow = probe(b, part, b.loadColumn(0));
    int brand = b.emitNew(Opcode.LOAD_BUILD, part, partRow, 0);
    int category = b.emitNew(Opcode.LOAD_BUILD, part, partRow, 1);
    int keep = equals(b, category, WANTED_CATEGORY);
    int supplierRow = probe(b, supplier, b.loadColumn(1));
    int region = b.emitNew(Opcode.LOAD_BUILD, supplier, supplierRow, 0);
    keep = b.emitNew(Opcode.AND, keep, equals(b, region, WANTED_REGION), 0);
    int dateRow = probe(b, date, b.loadColumn(2));
    int year = b.emitNew(Opcode.LOAD_BUILD, date, dateRow, 0);
    keep = b.emitNew(Opcode.AND, keep, b.emitNew(Opcode.IS_NOT_NULL, dateRow, 0, 0), 0);
    return b.build(keep, List.of(new Program.Output(year, INT), new Program.Output(brand, INT),
        new Program.Output(b.loadColumn(3), INT)));
  }

  /**
   * The three steps of the unfused plan, each one probe (and filter) of one table:
   * <ol>
   *   <li>(lo_partkey, lo_suppkey, lo_orderdate, lo_revenue) with part, WHERE p_category = 1 ->
   *       (lo_suppkey, lo_orderdate, lo_revenue, p_brand);
   *   <li>that with supplier, WHERE s_region = 1 -> (lo_orderdate, lo_revenue, p_brand);
   *   <li>that with date -> (d_year, p_brand, lo_revenue), the aggregation's input.
   * </ol>
   */
  private static Program[] unfusedPrograms() {
    ProgramBuilder p = new ProgramBuilder(List.of(INT, INT, INT, INT), false);
    int part = p.table(PART);
    int partRow = probe(p, part, p.loadColumn(0));
    int brand = p.emitNew(Opcode.LOAD_BUILD, part, partRow, 0);
    int categoryKept = equals(p, p.emitNew(Opcode.LOAD_BUILD, part, partRow, 1),
        WANTED_CATEGORY);
    Program first = p.build(categoryKept, List.of(new Program.Output(p.loadColumn(1), INT),
        new Program.Output(p.loadColumn(2), INT), new Program.Output(p.loadColumn(3), INT),
        new Program.Output(brand, INT)));

    ProgramBuilder s = new ProgramBuilder(List.of(INT, INT, INT, INT), false);
    int supplier = s.table(SUPPLIER);
    int supplierRow = probe(s, supplier, s.loadColumn(0));
    int regionKept = equals(s, s.emitNew(Opcode.LOAD_BUILD, supplier, supplierRow, 0),
        WANTED_REGION);
    Program second = s.build(regionKept, List.of(new Program.Output(s.loadColumn(1), INT),
        new Program.Output(s.loadColumn(2), INT), new Program.Output(s.loadColumn(3), INT)));

    ProgramBuilder d = new ProgramBuilder(List.of(INT, INT, INT), false);
    int date = d.table(DATE);
    int dateRow = probe(d, date, d.loadColumn(0));
    int dateKept = d.emitNew(Opcode.IS_NOT_NULL, dateRow, 0, 0);
    Program third = d.build(dateKept, List.of(
        new Program.Output(d.emitNew(Opcode.LOAD_BUILD, date, dateRow, 0), INT),
        new Program.Output(d.loadColumn(2), INT), new Program.Output(d.loadColumn(1), INT)));
    return new Program[] {first, second, third};
  }

  // ---- data ------------------------------------------------------------------------------------

  /**
   * part: p_partkey 1..200,000, p_category uniform in 0..24, p_brand 40 per category; {@code
   * sparse}: only category 1, keys {@value #SPARSE_KEY_STRIDE} apart.
   */
  private static JoinTable buildPart(Backend backend, GpuStream stream, boolean sparse) {
    Random random = new Random(2);
    List<int[]> rows = new ArrayList<>();
    for (int i = 0; i < PART_ROWS; i++) {
      int category = random.nextInt(CATEGORIES);
      int brand = category * BRANDS_PER_CATEGORY + random.nextInt(BRANDS_PER_CATEGORY);
      if (!sparse || category == WANTED_CATEGORY) {
        rows.add(new int[] {(i + 1) * (sparse ? SPARSE_KEY_STRIDE : 1), brand, category});
      }
    }
    return build(backend, stream, PART, columnsOf(rows, 3));
  }

  /**
   * supplier: s_suppkey 1..20,000, s_region uniform in 0..4; {@code sparse}: only region 1, keys
   * {@value #SPARSE_KEY_STRIDE} apart.
   */
  private static JoinTable buildSupplier(Backend backend, GpuStream stream, boolean sparse) {
    Random random = new Random(3);
    List<int[]> rows = new ArrayList<>();
    for (int i = 0; i < SUPPLIER_ROWS; i++) {
      int region = random.nextInt(REGIONS);
      if (!sparse || region == WANTED_REGION) {
        rows.add(new int[] {(i + 1) * (sparse ? SPARSE_KEY_STRIDE : 1), region});
      }
    }
    return build(backend, stream, SUPPLIER, columnsOf(rows, 2));
  }

  /** Row-wise values as {@code width} columns. */
  private static int[][] columnsOf(List<int[]> rows, int width) {
    int[][] columns = new int[width][rows.size()];
    for (int r = 0; r < rows.size(); r++) {
      for (int c = 0; c < width; c++) {
        columns[c][r] = rows.get(r)[c];
      }
    }
    return columns;
  }

  /** date: 2,556 days from 1992-01-01, d_datekey as yyyymmdd, d_year. */
  private static JoinTable buildDate(Backend backend, GpuStream stream) {
    int[][] columns = new int[2][DATE_ROWS];
    for (int i = 0; i < DATE_ROWS; i++) {
      columns[0][i] = dateKey(i);
      columns[1][i] = LocalDate.of(1992, 1, 1).plusDays(i).getYear();
    }
    return build(backend, stream, DATE, columns);
  }

  private static int dateKey(int day) {
    LocalDate d = LocalDate.of(1992, 1, 1).plusDays(day);
    return d.getYear() * 10000 + d.getMonthValue() * 100 + d.getDayOfMonth();
  }

  private static JoinTable build(Backend backend, GpuStream stream, JoinTableSchema schema,
      int[][] columns) {
    try (ColumnBatch<DeviceColumn> batch = upload(backend, stream, columns)) {
      return backend.hashJoinKernel().build(schema, batch, backend.deviceMemory(), stream);
    }
  }

  /**
   * The fact batch: keys uniform over each dimension's unfiltered keys (part's and supplier's
   * {@code stride} apart), lo_revenue in 0 .. 10^7.
   */
  private static ColumnBatch<DeviceColumn> uploadFact(Backend backend, GpuStream stream,
      int rows, int stride) {
    int[] dateKeys = new int[DATE_ROWS];
    for (int i = 0; i < DATE_ROWS; i++) {
      dateKeys[i] = dateKey(i);
    }
    Random random = new Random(1);
    int[][] columns = new int[4][rows];
    for (int i = 0; i < rows; i++) {
      columns[0][i] = (1 + random.nextInt(PART_ROWS)) * stride;
      columns[1][i] = (1 + random.nextInt(SUPPLIER_ROWS)) * stride;
      columns[2][i] = dateKeys[random.nextInt(DATE_ROWS)];
      columns[3][i] = random.nextInt(10_000_000);
    }
    return upload(backend, stream, columns);
  }

  /** A device batch of INT columns (no nulls); the caller closes it. */
  private static ColumnBatch<DeviceColumn> upload(Backend backend, GpuStream stream,
      int[][] columns) {
    int rows = columns[0].length;
    List<HostColumn> host = new ArrayList<>();
    try {
      for (int[] values : columns) {
        try (HostColumnBuilder builder =
            new HostColumnBuilder(INT, rows, backend.stagingAllocator())) {
          for (int v : values) {
            builder.appendInt(v);
          }
          host.add(builder.build());
        }
      }
    } catch (RuntimeException e) {
      host.forEach(HostColumn::close);
      throw e;
    }
    return toDevice(host, rows, backend, stream);
  }

  /** {@code host}'s columns as a device batch (they are closed); the caller closes it. */
  static ColumnBatch<DeviceColumn> toDevice(List<HostColumn> host, int rows, Backend backend,
      GpuStream stream) {
    try (ColumnBatch<HostColumn> batch = new ColumnBatch<>(host, rows)) {
      ColumnBatch<DeviceColumn> device =
          ColumnTransfer.toDeviceAsync(batch, backend.deviceMemory(), stream);
      stream.synchronize();
      return device;
    }
  }
}
