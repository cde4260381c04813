package dev.tessera.gpu.bench;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.RuntimeOptions;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.HostColumnBuilder;
import dev.tessera.gpu.sort.SortKey;
import dev.tessera.gpu.sort.TopKKernel;
import dev.tessera.gpu.sort.TopKSpec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * Benchmark (not a test) of the running top-k ({@code ORDER BY key DESC LIMIT k}) over batches of
 * a key and an int64 payload, as one task feeds it: {@code rows} rows in 8 batches, int64 keys
 * (random) and string keys ("key-" + a random number), for k = 1, 10, 100 and 1,024; then, on
 * one batch, the same top-k against a full sort of that batch (k = its rows), the device sort
 * path. Prints the median wall time of every add plus finish (each synchronizes) and the
 * bandwidth floor (every key read once).
 *
 * <pre>run-bench.sh dev.tessera.gpu.bench.TopKBench [rows] [deviceGBps] [backend]</pre>
 */
public final class TopKBench {
  private static final int WARM_UP = 1;
  private static final int RUNS = 5;
  private static final int BATCHES = 8;

  private TopKBench() {}

  public static void main(String[] args) {
    int rows = args.length > 0 ? Integer.parseInt(args[0]) : 100_000_000;
    double deviceGBps = args.length > 1 ? Double.parseDouble(args[1]) : 3350;
    BackendKind kind = BackendKind.fromConfigValue("backend", args.length > 2 ? args[2] : "cuda");
    RuntimeOptions options = RuntimeOptions.defaults().withDeviceMemoryCap(24L << 30)
        .withPinnedMemoryCap(8L << 30);
    try (Backend backend = Backends.open(kind, options); GpuStream stream = backend.newStream()) {
      System.out.println("top-k benchmark on " + backend.description() + ", " + rows + " rows in "
          + BATCHES + " batches");
      for (ColumnType keyType : List.of(ColumnType.LONG, ColumnType.STRING)) {
        List<ColumnBatch<DeviceColumn>> batches = new ArrayList<>();
        try {
          long keyBytes = 0;
          for (int b = 0; b < BATCHES; b++) {
            int from = (int) ((long) rows * b / BATCHES);
            int to = (int) ((long) rows * (b + 1) / BATCHES);
            ColumnBatch<DeviceColumn> batch = upload(backend, stream, keyType, from, to);
            batches.add(batch);
            keyBytes += keyBytes(batch);
          }
          System.out.println(keyType + " keys, every batch");
          System.out.println("k             median ms   G rows/s   floor ms   x floor");
          for (int k : new int[] {1, 10, 100, 1024}) {
            measure(backend, stream, keyType, k, batches, rows, keyBytes, deviceGBps);
          }
          ColumnBatch<DeviceColumn> one = batches.get(0);
          System.out.println(keyType + " keys, one batch: top-k against a full sort");
          for (int k : new int[] {1, 1024, one.rowCount()}) {
            measure(backend, stream, keyType, k, List.of(one), one.rowCount(), keyBytes(one),
                deviceGBps);
          }
        } finally {
          batches.forEach(ColumnBatch::close);
        }
      }
    }
  }

  private static long keyBytes(ColumnBatch<DeviceColumn> batch) {
    DeviceColumn key = batch.column(0);
    return key.dataBytes() + (key.offsets() == null ? 0 : 4L * (batch.rowCount() + 1));
  }

  private static void measure(Backend backend, GpuStream stream, ColumnType keyType, int k,
      List<ColumnBatch<DeviceColumn>> batches, int rows, long keyBytes, double deviceGBps) {
    TopKSpec spec = new TopKSpec(List.of(keyType, ColumnType.LONG),
        List.of(SortKey.descending(0)), k);
    TopKKernel kernel = backend.topKKernel();
    double[] millis = new double[RUNS];
    for (int i = 0; i < WARM_UP + RUNS; i++) {
      long started = System.nanoTime();
      try (TopKKernel.Running running = kernel.open(spec, backend.deviceMemory(), stream)) {
        for (ColumnBatch<DeviceColumn> batch : batches) {
          running.add(batch);
        }
        running.finish().close();
      }
      if (i >= WARM_UP) {
        millis[i - WARM_UP] = (System.nanoTime() - started) / 1e6;
      }
    }
    Arrays.sort(millis);
    double median = millis[RUNS / 2];
    double floor = keyBytes / (deviceGBps * 1e9) * 1e3;
    System.out.printf("%,12d  %9.3f  %9.2f  %9.3f  %8.1f%n", k, median, rows / median / 1e6,
        floor, median / floor);
  }

  /** Rows [from, to): a random key and the row number. */
  private static ColumnBatch<DeviceColumn> upload(Backend backend, GpuStream stream,
      ColumnType keyType, int from, int to) {
    Random random = new Random(from);
    int rows = to - from;
    HostColumn key;
    HostColumn payload;
    try (HostColumnBuilder kb = new HostColumnBuilder(keyType, rows, backend.stagingAllocator());
        HostColumnBuilder pb = new HostColumnBuilder(ColumnType.LONG, rows,
            backend.stagingAllocator())) {
      for (int i = from; i < to; i++) {
        if (keyType.isString()) {
          kb.appendString("key-" + random.nextInt(1 << 30));
        } else {
          kb.appendLong(random.nextLong());
        }
        pb.appendLong(i);
      }
      key = kb.build();
      payload = pb.build();
    }
    try (ColumnBatch<HostColumn> host = new ColumnBatch<>(List.of(key, payload), rows)) {
      ColumnBatch<DeviceColumn> device =
          ColumnTransfer.toDeviceAsync(host, backend.deviceMemory(), stream);
      stream.synchronize();
      return device;
    }
  }
}
