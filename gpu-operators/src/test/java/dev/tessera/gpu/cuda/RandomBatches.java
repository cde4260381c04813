package dev.tessera.gpu.cuda;

import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.TestColumns;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.arrow.memory.BufferAllocator;

/**
 * Random host input batches for differential tests. Each column gets one of two value profiles:
 * TestColumns.random's (full-range values with edges: MIN/MAX, NaN, -0.0, infinities, long
 * strings), or small values (so that ANSI arithmetic mostly succeeds, comparisons with small
 * constants are selective, and division by zero turns up in the middle of a batch); and a null
 * fraction of 0, 5%, 30% or 100%.
 */
final class RandomBatches {
  private RandomBatches() {}

  private static final double[] NULL_FRACTIONS = {0.0, 0.0, 0.05, 0.3, 1.0};
  private static final String[] SMALL_STRINGS = {"", "a", "ab", "x", "xx", "Tessera", "grüße",
      "日本語", "row", "7", "comma,", "\uD83D\uDE80", "Tessera on GPUs", "Tessera on GPUS",
      "MFGR#2221", "MFGR#2228", "grüße, grüße"};

  /** {@code count} column types drawn from TestColumns.ALL_TYPES. */
  static List<ColumnType> randomTypes(Random random, int count) {
    List<ColumnType> types = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      types.add(TestColumns.ALL_TYPES.get(random.nextInt(TestColumns.ALL_TYPES.size())));
    }
    return types;
  }

  /** A host batch of {@code rows} rows with columns of {@code types}. The caller closes it. */
  static ColumnBatch<HostColumn> build(List<ColumnType> types, int rows, long seed,
      BufferAllocator allocator) {
    Random random = new Random(seed);
    List<HostColumn> columns = new ArrayList<>(types.size());
    try {
      for (ColumnType type : types) {
        double nullFraction = NULL_FRACTIONS[random.nextInt(NULL_FRACTIONS.length)];
        List<Object> values = random.nextBoolean()
            ? TestColumns.random(type, rows, nullFraction, random.nextLong())
            : small(type, rows, nullFraction, new Random(random.nextLong()));
        columns.add(TestColumns.build(type, values, allocator));
      }
      return new ColumnBatch<>(columns, rows);
    } catch (RuntimeException e) {
      columns.forEach(HostColumn::close);
      throw e;
    }
  }

  private static List<Object> small(ColumnType type, int rows, double nullFraction,
      Random random) {
    List<Object> values = new ArrayList<>(rows);
    for (int i = 0; i < rows; i++) {
      if (random.nextDouble() < nullFraction) {
        values.add(null);
        continue;
      }
      int v = random.nextInt(41) - 20;
      values.add(switch (type.id()) {
        case BOOLEAN -> random.nextBoolean();
        case BYTE -> (byte) v;
        case SHORT -> (short) v;
        case INT -> v;
        case LONG -> (long) v;
        case FLOAT -> random.nextInt(50) == 0 ? Float.NaN : v / 2.0f;
        case DOUBLE -> random.nextInt(50) == 0 ? -0.0 : v / 4.0;
        case DATE -> random.nextInt(25_000) - 500;
        case TIMESTAMP -> (long) random.nextInt(100_000);
        case DECIMAL -> {
          long bound = BigInteger.TEN.pow(type.precision()).longValueExact() - 1;
          long unscaled = Math.max(-bound, Math.min(bound, v * 7L));
          yield new BigDecimal(BigInteger.valueOf(unscaled), type.scale());
        }
        case STRING -> SMALL_STRINGS[random.nextInt(SMALL_STRINGS.length)];
      });
    }
    return values;
  }
}
