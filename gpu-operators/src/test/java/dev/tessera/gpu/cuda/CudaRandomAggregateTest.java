package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.RuntimeOptions;
import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.agg.HashAggregateKernel;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.TestColumns;
import dev.tessera.gpu.expr.RowErrorException;
import dev.tessera.gpu.join.JoinTable;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Random probing pipelines (RandomPrograms.generateProbing: repeated and NULL keys, empty
 * tables, a third of the filters ending in a join's conjunct) feeding random aggregations
 * (GeneratedAggregateCompileTest.randomSpec: 0 to 4 keys of any type, a function per other
 * output), on CUDA with generated kernels against the host reference: the same row error, or the
 * same groups. Global aggregates accumulate in registers, grouped ones update per-block tables or
 * queue their kept rows, and a filter whose probe sits behind conjuncts that read a value holds
 * the rows that reach it in its warps' stacks (PrefilteredRows).
 */
@RequiresCuda
class CudaRandomAggregateTest extends CudaVersusHostTest {
  private static final int PROGRAMS = 40;
  private static final int MAX_INPUT_COLUMNS = 5;

  @Override
  protected RuntimeOptions cudaOptions() {
    return super.cudaOptions().withCodegen(true);
  }

  @ParameterizedTest(name = "{0} rows")
  @ValueSource(ints = {1, 1_025, 70_000})
  void randomProbingAggregatesMatchTheHostReference(int rows) {
    for (int i = 0; i < PROGRAMS; i++) {
      long seed = 9_000_000_000L + rows * 1_000L + i;
      Random random = new Random(seed);
      List<ColumnType> types = RandomBatches.randomTypes(random, 1 + random.nextInt(
          MAX_INPUT_COLUMNS));
      RandomPrograms.Probing probing =
          RandomPrograms.generateProbing(types, random.nextBoolean(), random.nextLong());
      AggregateSpec spec = withoutStringCounts(
          GeneratedAggregateCompileTest.randomSpec(probing.program(), random));
      try (ColumnBatch<HostColumn> input =
               RandomBatches.build(types, rows, random.nextLong(), cuda.stagingAllocator())) {
        Object expected = aggregate(host, hostStream, probing, spec, input);
        Object actual = aggregate(cuda, cudaStream, probing, spec, input);
        if (!expected.equals(actual)) {
          fail("host: " + expected + "\ncuda: " + actual + "\n  (seed " + seed + ", " + rows
              + " rows of " + types + ", " + spec + ")\n" + probing.program().disassemble());
        }
      }
    }
  }

  @AfterAll
  void generatedKernelsRan() {
    assertTrue(((CudaBackend) cuda).device().generated().loadedCount() > 0,
        "no pipeline ran as a generated kernel");
  }

  /**
   * {@code spec} with COUNT(*) for each COUNT of a STRING input, which the host reference does not
   * aggregate (it reads fixed-width values; the Spark layer counts a string's NULL test instead).
   */
  private static AggregateSpec withoutStringCounts(AggregateSpec spec) {
    List<AggregateFunction> functions = new ArrayList<>();
    for (AggregateFunction f : spec.functions()) {
      boolean countsString = f.kind() == AggregateFunction.Kind.COUNT
          && spec.inputTypes().get(f.input()).isString();
      functions.add(countsString
          ? new AggregateFunction(AggregateFunction.Kind.COUNT_ROWS, -1, ColumnType.LONG) : f);
    }
    return new AggregateSpec(spec.inputTypes(), spec.keyCount(), functions, spec.ansi());
  }

  /**
   * {@code probing}'s program over {@code input} aggregated by {@code spec} on {@code backend}:
   * the groups' rows in a fixed order, or the row error as text.
   */
  private static Object aggregate(Backend backend, GpuStream stream,
      RandomPrograms.Probing probing, AggregateSpec spec, ColumnBatch<HostColumn> input) {
    List<JoinTable> tables = probing.buildTables(backend, stream);
    try (ColumnBatch<DeviceColumn> onDevice =
             ColumnTransfer.toDeviceAsync(input, backend.deviceMemory(), stream);
        HashAggregateKernel.Aggregation aggregation =
            backend.hashAggregateKernel().open(spec, backend.deviceMemory(), stream)) {
      try {
        aggregation.update(probing.program(), tables, onDevice);
      } catch (RowErrorException e) {
        return "error: " + e.getMessage();
      }
      try (ColumnBatch<DeviceColumn> out = aggregation.finish();
          ColumnBatch<HostColumn> back =
              ColumnTransfer.toHost(out, backend.stagingAllocator(), stream)) {
        List<List<Object>> groups = TestColumns.rows(back);
        TestColumns.sortByText(groups);
        return groups;
      }
    } finally {
      tables.forEach(JoinTable::close);
    }
  }
}
