package dev.tessera.gpu.bench;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.agg.HashAggregateKernel;
import dev.tessera.gpu.codec.DeviceEncodedColumn;
import dev.tessera.gpu.codec.EncodedColumn;
import dev.tessera.gpu.codec.Encoding;
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
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * Benchmark (not a test) of the hash aggregation: {@code SELECT k, count(*), sum(v), min(v),
 * max(v) GROUP BY k} over one batch of int64 k and v, for several group counts, in eighteen
 * forms:
 * <ul>
 *   <li>"long keys": update(batch) (the fused kernel with the identity program);
 *   <li>"nullable keys": the same, k with a validity bitmap and one row in 100 NULL (the kernel
 *       of a key that can be NULL: its null flags held and compared; one group more);
 *   <li>"filter v > 0": the same with {@code WHERE v > 0}, update(program, batch): the filter,
 *       projection and aggregation in one kernel;
 *   <li>"string keys": k as a STRING ("key-" + number), up to 10^6 groups; "long string
 *       keys" the same with {@value #LONG_STRING_PREFIX} before the number (14 to 19 bytes,
 *       past what a generated kernel holds in its block's table: found in the global table);
 *       "dictionary string keys" those long strings as a cached table holds a column of few
 *       distinct strings: codes into the batch's dictionary (GPU-FOR); "two dictionary string
 *       keys" those and a second dictionary string column, "tag-" and the number modulo 3
 *       (GROUP BY k, tag: the tag adds no group), as TPC-H Q1 groups a cached lineitem by two
 *       flags; "string keys, filter v > 0" the string keys with {@code WHERE v > 0};
 *   <li>"long keys, 8 batches": the rows in 8 batches of one aggregation, so that what is
 *       decided after the first batch (the direct group map for small dense integer keys, the
 *       slices of a generated kernel's groups) serves the rest. Any form chosen by name may end
 *       with ", 8 batches" ("two columns, 8 batches");
 *   <li>"no keys": the same functions over every row, without GROUP BY (generated kernels keep
 *       a global aggregate's accumulators in registers);
 *   <li>"double values": "long keys" with v a DOUBLE (whole numbers of 21 bits): functions
 *       that are not integral (their runs sum in 128 bits and compare in Spark's order);
 *   <li>"two keys": GROUP BY k, k % 3 (k % 3 adds no group; the generated kernel holds both
 *       keys in its per-block table, as a kernel that probes no join table does), and "two
 *       keys, filter v > 0" the same WHERE v > 0; "two columns": GROUP BY k, c with c a second
 *       input column, an INT (k % 3, made on the host: no group more, and unlike the
 *       remainder's, a key that cannot be NULL), and "two columns, filter v > 0"; "two nullable
 *       columns" GROUP BY k, c with k NULL in one row in 100 and c in another (the kernel of
 *       two keys that can be NULL, whose null flags it holds and compares; (k, NULL) a group more
 *       per k, (NULL, c) three more); "two long columns" and "two long columns, filter v > 0"
 *       the two columns' forms with c a LONG (the kernel of two 8-byte keys).
 * </ul>
 * Prints the median wall time of update + finish (each synchronizes) over the runs, and the
 * bandwidth floor (every input read once, every group's five values written once). Before a
 * form's runs, its aggregation runs 2,000 times over a small batch (in as many updates as the
 * form's), so that the host's part is timed compiled by the JVM, as an executor runs it, not
 * interpreted.
 *
 * <pre>run-bench.sh dev.tessera.gpu.bench.HashAggregateBench [rows] [deviceGBps] [backend] [codegen]
 *     [forms] [groups]</pre>
 *
 * <p>{@code forms}, when given, is a comma-separated list of the forms to run ("long keys,no
 * keys"); all eighteen otherwise. {@code groups}, when given, is a comma-separated list of the
 * group counts to run ("10,3000": any count up to what a form runs, 10^7, 10^6 for string keys,
 * 1 without keys); otherwise 1, 10, ... up to that. A profile of one group count's launch then
 * ends after it, not after every larger count's batches were made and run.
 */
public final class HashAggregateBench {
  /** "long string keys": what comes before the number of a key. */
  private static final String LONG_STRING_PREFIX = "customer-key-";
  private static final int WARM_UP = 1;
  private static final int RUNS = 5;
  private static final int HOST_WARM_UP = 2_000;
  private static final long MAX_STRING_GROUPS = 1_000_000L;
  /** "nullable keys": one row in this many has a NULL key. */
  private static final int NULL_KEY_EVERY = 100;

  /** What ends the name of a form run in 8 batches of one aggregation. */
  private static final String IN_8_BATCHES = ", 8 batches";

  private HashAggregateBench() {}

  public static void main(String[] args) {
    BenchArgs run = BenchArgs.parse(args, 32 << 20);
    int rows = run.rows();
    try (Backend backend = Backends.open(run.backend(), run.options(16L << 30, 4L << 30));
        GpuStream stream = backend.newStream()) {
      System.out.println("hash aggregate benchmark on " + backend.description() + ", " + rows
          + " rows" + (run.codegen() ? ", generated kernels" : ", interpreter kernels"));
      List<String> forms = List.of("long keys", "filter v > 0", "two keys, filter v > 0",
          "string keys", "long keys, 8 batches", "no keys", "nullable keys", "double values",
          "two keys", "long string keys", "dictionary string keys",
          "string keys, filter v > 0", "two dictionary string keys", "two columns",
          "two columns, filter v > 0", "two nullable columns", "two long columns",
          "two long columns, filter v > 0");
      if (args.length > 4) {
        List<String> chosen = List.of(args[4].split(",(?! )"));
        for (String form : chosen) {
          if (!forms.contains(baseForm(form))) {
            throw new IllegalArgumentException("no form '" + form + "'; the forms: " + forms);
          }
        }
        forms = chosen;
      }
      List<Long> chosenGroups = args.length > 5 ? groupCounts(args[5]) : null;
      for (String named : forms) {
        String form = baseForm(named);
        // The text before a string key's number; null where the key is a LONG.
        String prefix = form.startsWith("string keys") ? "key-"
            : form.equals("long string keys") || form.endsWith("dictionary string keys")
                ? LONG_STRING_PREFIX : null;
        boolean dictionary = form.endsWith("dictionary string keys");
        boolean tags = form.equals("two dictionary string keys");
        boolean strings = prefix != null;
        boolean nullableKeys = form.equals("nullable keys") || form.equals("two nullable columns");
        boolean longColumns = form.startsWith("two long columns");
        boolean twoColumns = form.startsWith("two columns") || longColumns
            || form.equals("two nullable columns");
        ColumnType secondType = longColumns ? ColumnType.LONG : ColumnType.INT;
        int batches = named.endsWith(IN_8_BATCHES) ? 8 : 1;
        ColumnType keyType = strings ? ColumnType.STRING : ColumnType.LONG;
        boolean global = form.equals("no keys");
        boolean twoKeys = form.startsWith("two keys");
        boolean doubles = form.equals("double values");
        AggregateSpec spec = twoKeys ? twoKeySpec(ColumnType.LONG, ColumnType.LONG)
            : tags ? twoKeySpec(ColumnType.STRING, ColumnType.STRING)
            : twoColumns ? twoKeySpec(ColumnType.LONG, secondType)
            : spec(keyType, global ? 0 : 1, doubles ? ColumnType.DOUBLE : ColumnType.LONG);
        boolean positive = form.equals("filter v > 0") || form.equals("string keys, filter v > 0");
        Program program = positive ? positiveValues(List.of(keyType))
            : twoKeys ? byTwoKeys(form.endsWith("filter v > 0"))
            : twoColumns && form.endsWith("filter v > 0")
                ? positiveValues(List.of(ColumnType.LONG, secondType)) : null;
        Keys keys = new Keys(prefix, dictionary, tags, nullableKeys,
            twoColumns ? secondType : null);
        warmHostPaths(backend, stream, spec, program, keys, doubles, batches);
        System.out.println(named);
        System.out.println("groups        median ms   G rows/s   floor ms   x floor");
        long maxGroups = global ? 1 : strings ? MAX_STRING_GROUPS : 10_000_000L;
        for (long groups : chosenGroups != null ? chosenGroups : powersOfTen(maxGroups)) {
          if (groups > maxGroups) {
            continue;
          }
          List<ColumnBatch<DeviceColumn>> inputs = new ArrayList<>();
          try {
            long inputBytes = 0;
            for (int b = 0; b < batches; b++) {
              int from = (int) ((long) rows * b / batches);
              int to = (int) ((long) rows * (b + 1) / batches);
              ColumnBatch<DeviceColumn> input =
                  upload(backend, stream, from, to, groups, keys, doubles);
              inputs.add(input);
              for (DeviceColumn c : input.columns()) {
                inputBytes += c.dataBytes()
                    + (c.offsets() == null ? 0 : 4L * (input.rowCount() + 1))
                    + (c.validity() == null ? 0 : (input.rowCount() + 7L) / 8);
              }
            }
            measure(backend, stream, spec, program, inputs, rows, inputBytes, run.deviceGBps());
          } finally {
            inputs.forEach(ColumnBatch::close);
          }
        }
      }
    }
  }

  /** The form a chosen form runs in 8 batches: "two columns, 8 batches" is "two columns". */
  private static String baseForm(String form) {
    return form.endsWith(IN_8_BATCHES)
        ? form.substring(0, form.length() - IN_8_BATCHES.length()) : form;
  }

  /** The group counts of the {@code groups} argument: each from 1 to 10^7. */
  private static List<Long> groupCounts(String groups) {
    List<Long> counts = new ArrayList<>();
    for (String count : groups.split(",")) {
      long n;
      try {
        n = Long.parseLong(count.trim());
      } catch (NumberFormatException e) {
        n = -1;
      }
      if (n < 1 || n > 10_000_000L) {
        throw new IllegalArgumentException("groups: '" + count
            + "' is not a count from 1 to 10000000 (say \"10,3000\")");
      }
      counts.add(n);
    }
    return counts;
  }

  /** 1, 10, 100, ... up to {@code most}: the group counts a form runs when none are chosen. */
  private static List<Long> powersOfTen(long most) {
    List<Long> counts = new ArrayList<>();
    for (long groups = 1; groups <= most; groups *= 10) {
      counts.add(groups);
    }
    return counts;
  }

  /**
   * Runs the form's aggregation over a small batch {@value #HOST_WARM_UP} times, {@code
   * batches} updates each, so that the JVM has compiled the host's part of an update and a
   * finish before anything is timed: a Spark executor runs them for every batch of every task,
   * while the timed runs alone (6 a group count) would time them interpreted. As many updates as
   * the timed aggregation makes, so that what only a later batch runs (the decisions after the
   * first, the group table's growth) is compiled too: with one update a warm-up, "long keys, 8
   * batches" of 4.2 M rows took 1.63 ms at 1,000 groups, 1.24 ms with eight (H100).
   */
  private static void warmHostPaths(Backend backend, GpuStream stream, AggregateSpec spec,
      Program program, Keys keys, boolean doubles, int batches) {
    try (ColumnBatch<DeviceColumn> small =
        upload(backend, stream, 0, 4096, 10, keys, doubles)) {
      HashAggregateKernel kernel = backend.hashAggregateKernel();
      for (int i = 0; i < HOST_WARM_UP; i++) {
        try (HashAggregateKernel.Aggregation a = kernel.open(spec, backend.deviceMemory(), stream)) {
          for (int b = 0; b < batches; b++) {
            if (program == null) {
              a.update(small);
            } else {
              a.update(program, small);
            }
          }
          a.finish().close();
        }
      }
    }
  }

  /**
   * count(*), sum(v), min(v), max(v) of v of {@code valueType} grouped by the first column (keys
   * 1) or not (keys 0).
   */
  private static AggregateSpec spec(ColumnType keyType, int keys, ColumnType valueType) {
    return new AggregateSpec(List.of(keyType, valueType), keys, List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, 1, valueType),
        new AggregateFunction(Kind.MIN, 1, valueType),
        new AggregateFunction(Kind.MAX, 1, valueType)), false);
  }

  /**
   * count(*), sum(v), min(v), max(v) of a LONG v grouped by the first two columns, of {@code
   * first} and {@code second} (k, k % 3; two strings, the key and its tag; k and c).
   */
  private static AggregateSpec twoKeySpec(ColumnType first, ColumnType second) {
    return new AggregateSpec(List.of(first, second, ColumnType.LONG), 2,
        List.of(new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
            new AggregateFunction(Kind.SUM, 2, ColumnType.LONG),
            new AggregateFunction(Kind.MIN, 2, ColumnType.LONG),
            new AggregateFunction(Kind.MAX, 2, ColumnType.LONG)), false);
  }

  /**
   * k, k % 3, v (k % 3 adds no group), WHERE v > 0 where {@code filtered} (about half of the
   * rows).
   */
  private static Program byTwoKeys(boolean filtered) {
    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.LONG, ColumnType.LONG), false);
    int k = b.loadColumn(0);
    int v = b.loadColumn(1);
    int keep = filtered ? b.emitNew(Opcode.CMP_INT, v, b.loadConstant(0), Comparison.GT.code())
        : -1;
    int third = b.emitNew(Opcode.REM_INT, k, b.loadConstant(3), 64);
    List<Program.Output> outputs = List.of(new Program.Output(k, ColumnType.LONG),
        new Program.Output(third, ColumnType.LONG), new Program.Output(v, ColumnType.LONG));
    return b.build(keep, outputs);
  }

  /** The keys (of {@code keyTypes}) and a LONG v, WHERE v > 0 (about half of the rows). */
  private static Program positiveValues(List<ColumnType> keyTypes) {
    List<ColumnType> types = new ArrayList<>(keyTypes);
    types.add(ColumnType.LONG);
    ProgramBuilder b = new ProgramBuilder(types, false);
    List<Program.Output> outputs = new ArrayList<>();
    for (int c = 0; c < types.size(); c++) {
      outputs.add(new Program.Output(b.loadColumn(c), types.get(c)));
    }
    int v = outputs.get(keyTypes.size()).register();
    int keep = b.emitNew(Opcode.CMP_INT, v, b.loadConstant(0), Comparison.GT.code());
    return b.build(keep, outputs);
  }

  private static void measure(Backend backend, GpuStream stream, AggregateSpec spec,
      Program program, List<ColumnBatch<DeviceColumn>> inputs, int rows, long inputBytes,
      double deviceGBps) {
    HashAggregateKernel kernel = backend.hashAggregateKernel();
    double[] millis = new double[RUNS];
    long found = 0;
    for (int i = 0; i < WARM_UP + RUNS; i++) {
      long started = System.nanoTime();
      try (HashAggregateKernel.Aggregation a = kernel.open(spec, backend.deviceMemory(), stream)) {
        for (ColumnBatch<DeviceColumn> input : inputs) {
          if (program == null) {
            a.update(input);
          } else {
            a.update(program, input);
          }
        }
        try (ColumnBatch<DeviceColumn> out = a.finish()) {
          found = out.rowCount();
        }
      }
      if (i >= WARM_UP) {
        millis[i - WARM_UP] = (System.nanoTime() - started) / 1e6;
      }
    }
    Arrays.sort(millis);
    double median = millis[RUNS / 2];
    long bytes = inputBytes + found * 40L;
    double floor = bytes / (deviceGBps * 1e9) * 1e3;
    System.out.printf("%,12d  %9.3f  %9.2f  %9.3f  %8.1f%n", found, median,
        rows / median / 1e6, floor, median / floor);
  }

  /**
   * A form's keys: strings ({@code prefix} and the number) where {@code prefix} is not null,
   * else LONGs; as a cached table holds them where {@code dictionary} ({@link
   * #uploadDictionary}), with a second column of tags where {@code tags}; every {@value
   * #NULL_KEY_EVERY}th NULL where {@code nullable}; with a second column of the key modulo 3, of
   * type {@code secondColumn} (INT or LONG; none where null; where {@code nullable} too, another
   * row in {@value #NULL_KEY_EVERY} NULL).
   */
  private record Keys(String prefix, boolean dictionary, boolean tags, boolean nullable,
      ColumnType secondColumn) {}

  /**
   * Rows {@code [from, to)} of the form's batch: row i < groups has key i, later rows a random
   * one of {@code groups}, as {@code keys} says, values random ints.
   */
  private static ColumnBatch<DeviceColumn> upload(Backend backend, GpuStream stream, int from,
      int to, long groups, Keys keys, boolean doubles) {
    Random random = new Random(groups * 31 + from);
    int rows = to - from;
    String prefix = keys.prefix();
    boolean nullableKeys = keys.nullable();
    if (keys.dictionary()) {
      return uploadDictionary(backend, stream, from, to, groups, prefix, keys.tags(), random);
    }
    List<HostColumn> columns = new ArrayList<>();
    ColumnType keyType = prefix != null ? ColumnType.STRING : ColumnType.LONG;
    try (HostColumnBuilder kb = new HostColumnBuilder(keyType, rows, backend.stagingAllocator());
        HostColumnBuilder cb = keys.secondColumn() != null
            ? new HostColumnBuilder(keys.secondColumn(), rows, backend.stagingAllocator()) : null;
        HostColumnBuilder vb = new HostColumnBuilder(
            doubles ? ColumnType.DOUBLE : ColumnType.LONG, rows, backend.stagingAllocator())) {
      for (int i = from; i < to; i++) {
        long key = i < groups ? i : Math.floorMod(random.nextLong(), groups);
        if (cb != null && nullableKeys && i % NULL_KEY_EVERY == NULL_KEY_EVERY / 2 - 1) {
          cb.appendNull();
        } else if (cb != null && keys.secondColumn() == ColumnType.LONG) {
          cb.appendLong(key % 3);
        } else if (cb != null) {
          cb.appendInt((int) (key % 3));
        }
        if (nullableKeys && i % NULL_KEY_EVERY == NULL_KEY_EVERY - 1) {
          kb.appendNull();
        } else if (prefix != null) {
          kb.appendString(prefix + key);
        } else {
          kb.appendLong(key);
        }
        if (doubles) {
          vb.appendDouble(random.nextInt(1 << 20) - (1 << 19));
        } else {
          vb.appendLong(random.nextInt());
        }
      }
      columns.add(kb.build());
      if (cb != null) {
        columns.add(cb.build());
      }
      columns.add(vb.build());
    }
    try (ColumnBatch<HostColumn> host = new ColumnBatch<>(columns, rows)) {
      ColumnBatch<DeviceColumn> device =
          ColumnTransfer.toDeviceAsync(host, backend.deviceMemory(), stream);
      stream.synchronize();
      return device;
    }
  }

  /**
   * {@link #upload}'s rows with the keys {@code prefix} and the number (and, where {@code tags},
   * "tag-" and the number modulo 3 in a second column), encoded as the cache encodes them (a
   * dictionary of the batch's distinct strings, the rows' codes GPU-FOR), and the values plain.
   */
  private static ColumnBatch<DeviceColumn> uploadDictionary(Backend backend, GpuStream stream,
      int from, int to, long groups, String prefix, boolean tags, Random random) {
    int rows = to - from;
    byte[][] keys = new byte[rows][];
    byte[][] tagged = new byte[rows][];
    long[] values = new long[rows];
    for (int i = from; i < to; i++) {
      long key = i < groups ? i : Math.floorMod(random.nextLong(), groups);
      keys[i - from] = (prefix + key).getBytes(StandardCharsets.UTF_8);
      tagged[i - from] = ("tag-" + key % 3).getBytes(StandardCharsets.UTF_8);
      values[i - from] = random.nextInt();
    }
    List<EncodedColumn> encoded = new ArrayList<>();
    encoded.add(EncodedColumn.encodeStrings(keys, rows));
    if (tags) {
      encoded.add(EncodedColumn.encodeStrings(tagged, rows));
    }
    encoded.add(EncodedColumn.encodeFixed(ColumnType.LONG, values, null, rows, Encoding.PLAIN));
    List<DeviceColumn> columns = new ArrayList<>();
    try {
      for (EncodedColumn column : encoded) {
        DeviceEncodedColumn copy = DeviceEncodedColumn.upload(column, backend.deviceMemory(),
            backend.stagingAllocator(), stream);
        columns.add(copy.borrow(copy)); // the batch's column owns its copy
      }
      return new ColumnBatch<>(columns, rows);
    } catch (RuntimeException e) {
      columns.forEach(DeviceColumn::close);
      throw e;
    }
  }
}
