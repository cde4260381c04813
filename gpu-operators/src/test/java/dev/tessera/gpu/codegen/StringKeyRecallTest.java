package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * A lane's last string key and its group (GroupLookup.beginStrings): remembered in a kernel of
 * one block a multiprocessor (an unfiltered GROUP BY of one string), not in others.
 * No GPU (CudaGeneratedHashAggregateDifferentialTest's string keys run them).
 */
class StringKeyRecallTest {
  private static final String RECALL = "the lane's last string key";

  private static AggregateSpec spec(List<ColumnType> keys) {
    return LocalKeyTableTest.spec(keys);
  }

  private static GeneratedKernel kernel(AggregateSpec spec, boolean filtered, boolean nullable)
      throws CodegenUnsupportedException {
    List<InputSpec> inputs = spec.inputTypes().stream()
        .map(t -> new InputSpec(t, Encoding.PLAIN, nullable)).toList();
    return AggregateUpdateGenerator.generate(AggregateBlockShapeTest.program(spec, filtered),
        inputs, spec, KernelFeatures.forArch("sm_90"));
  }

  @Test
  void noKernelDoesWhileTheBlocksTableHoldsShortStrings() throws Exception {
    // The unfiltered kernel of one string finds short strings by key (ShortStringTableTest).
    assertFalse(kernel(spec(List.of(ColumnType.STRING)), false, false).ptx().contains(RECALL));
    // Filtered (blocks of 128 threads), several keys with a string, fixed-width keys.
    assertFalse(kernel(spec(List.of(ColumnType.STRING)), true, false).ptx().contains(RECALL));
    assertFalse(kernel(spec(List.of(ColumnType.INT, ColumnType.STRING)), false, false).ptx()
        .contains(RECALL));
    assertFalse(kernel(spec(List.of(ColumnType.LONG)), false, false).ptx().contains(RECALL));
    assertFalse(kernel(spec(List.of(ColumnType.INT, ColumnType.INT)), false, false).ptx()
        .contains(RECALL));
  }
}
