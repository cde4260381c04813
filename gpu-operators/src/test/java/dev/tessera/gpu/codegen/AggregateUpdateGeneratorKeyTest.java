package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What a generated aggregate kernel's key tells apart (kernels are shared by key). No GPU. */
class AggregateUpdateGeneratorKeyTest {
  private static final List<ColumnType> TYPES = List.of(ColumnType.LONG, ColumnType.LONG);
  private static final InputSpec LONG = new InputSpec(ColumnType.LONG, Encoding.PLAIN, false);

  private static Program identity() {
    ProgramBuilder b = new ProgramBuilder(TYPES, false);
    return b.build(-1, List.of(new Program.Output(b.loadColumn(0), ColumnType.LONG),
        new Program.Output(b.loadColumn(1), ColumnType.LONG)));
  }

  private static String key(int keys, Kind kind) {
    return AggregateUpdateGenerator.key(identity(), List.of(LONG, LONG), new AggregateSpec(TYPES,
        keys, List.of(new AggregateFunction(kind, 1, ColumnType.LONG)), false));
  }

  @Test
  void functionsOfOneColumnThatDifferInKindDoNotShareAKernel() {
    for (int keys : new int[] {0, 1}) {
      assertNotEquals(key(keys, Kind.SUM), key(keys, Kind.MIN));
      assertNotEquals(key(keys, Kind.MIN), key(keys, Kind.MAX));
      assertNotEquals(key(keys, Kind.COUNT), key(keys, Kind.SUM));
      assertEquals(key(keys, Kind.MAX), key(keys, Kind.MAX));
    }
    assertNotEquals(key(0, Kind.SUM), key(1, Kind.SUM));
  }

  @Test
  void kernelsForDevicesWithAndWithoutReduxSyncDoNotShareAKey() {
    Program program = identity();
    AggregateSpec spec = new AggregateSpec(TYPES, 1,
        List.of(new AggregateFunction(Kind.SUM, 1, ColumnType.LONG)), false);
    String oldest = AggregateUpdateGenerator.key(program, List.of(LONG, LONG), spec);
    assertEquals(oldest, AggregateUpdateGenerator.key(program, List.of(LONG, LONG), spec,
        KernelFeatures.OLDEST));
    assertNotEquals(oldest, AggregateUpdateGenerator.key(program, List.of(LONG, LONG), spec,
        KernelFeatures.forArch("sm_90")));
  }
}
