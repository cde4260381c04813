package dev.tessera.gpu.codegen;

import static dev.tessera.gpu.codegen.AggregateBlockShapeTest.count;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * How a generated aggregate kernel updates a group's global accumulators and finds a group in
 * the global table, where the per-block table does not hold the row's: a keyed kernel's integer
 * MIN/MAX read first, the waits issued after every function's atomic (at most three such
 * functions), one fixed-width key decided by the slot's hash, and a fixed-width key's null flag
 * read only where the values are 0. No GPU (the CUDA differential suites run these kernels
 * against the host reference).
 */
class GlobalRowUpdateTest {
  /** COUNT(*) and the {@code kinds} of one LONG value, grouped by {@code keys}, in ANSI mode. */
  private static AggregateSpec spec(List<ColumnType> keys, Kind... kinds) {
    return spec(true, keys, kinds);
  }

  /** {@link #spec(List, Kind...)} with or without ANSI mode (without, integer sums wrap). */
  private static AggregateSpec spec(boolean ansi, List<ColumnType> keys, Kind... kinds) {
    List<ColumnType> types = new ArrayList<>(keys);
    types.add(ColumnType.LONG);
    List<AggregateFunction> functions = new ArrayList<>();
    functions.add(new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG));
    for (Kind kind : kinds) {
      functions.add(new AggregateFunction(kind, keys.size(), ColumnType.LONG));
    }
    return new AggregateSpec(types, keys.size(), functions, ansi);
  }

  private static GeneratedKernel kernel(AggregateSpec spec, boolean nullable)
      throws CodegenUnsupportedException {
    List<InputSpec> inputs = spec.inputTypes().stream()
        .map(t -> new InputSpec(t, Encoding.PLAIN, nullable)).toList();
    return AggregateUpdateGenerator.generate(ProgramBuilder.identity(spec.inputTypes(), false),
        inputs, spec, KernelFeatures.forArch("sm_90"));
  }

  @Test
  void aKeyedKernelReadsItsIntegerMinAndMaxBeforeTheirAtomicsInTheGlobalAccumulators()
      throws Exception {
    String ptx = kernel(spec(List.of(ColumnType.LONG), Kind.SUM, Kind.MIN, Kind.MAX), false)
        .ptx();
    // The global copy of the row path writes each only where the value improves on the read;
    // the kernel has two row paths, its items' with the shortcuts and without (ShortcutMode).
    assertEquals(2, count(ptx, "red.global.min.s64"));
    assertEquals(2, count(ptx, "red.global.max.s64"));
    // In each, its waits come after the last function's read: the max's read before the sum's
    // carry.
    int plain = ptx.indexOf("\n$L_item_plain");
    for (String copy : List.of(ptx.substring(0, plain), ptx.substring(plain))) {
      int maxRead = copy.lastIndexOf("ld.relaxed.gpu.global.u64");
      int minWrite = copy.indexOf("red.global.min.s64");
      assertTrue(maxRead >= 0 && maxRead < minWrite, "the reads come before the writes");
    }

    // Four functions that wait: each is written whole, as an atomic whose result no one reads.
    String wide = kernel(spec(List.of(ColumnType.LONG), Kind.SUM, Kind.SUM, Kind.MIN, Kind.MAX),
        false).ptx();
    assertEquals(0, count(wide, "red.global.min.s64"));
    assertEquals(0, count(wide, "ld.relaxed.gpu.global.u64"));
  }

  @Test
  void withoutAnsiAnIntegerSumToLongAddsItsLowWordAloneAndWaitsForNothing() throws Exception {
    // ANSI: the low word's atomic returns its old value, whose carry goes into the high word.
    String exact = kernel(spec(true, List.of(ColumnType.LONG), Kind.SUM), false).ptx();
    assertEquals(0, count(exact, "red.global.add.u64"));
    assertTrue(count(exact, "atom.global.add.u64") >= 2, "the low word's and the high word's");
    // Without it the sum is the int64 wrap: in every global copy (the row's, the warp's, a
    // run's) one atomic whose result no one reads, and no high word's.
    String wrapping = kernel(spec(false, List.of(ColumnType.LONG), Kind.SUM), false).ptx();
    assertEquals(count(exact, "atom.global.add.u64") - 2 * count(wrapping, "red.global.add.u64"),
        count(wrapping, "atom.global.add.u64"), "the counts' atomics only");
    assertTrue(count(wrapping, "red.global.add.u64") >= 1, wrapping);
    // SUM, SUM, MIN, MAX without ANSI: only MIN and MAX wait, so their reads come first.
    String four = kernel(spec(false, List.of(ColumnType.LONG), Kind.SUM, Kind.SUM, Kind.MIN,
        Kind.MAX), false).ptx();
    assertEquals(1, count(four, "red.global.min.s64"));
  }

  @Test
  void aSlotsHashDecidesOneFixedWidthKeyWithoutItsGroupsKey() throws Exception {
    // A probe reads the slot's hash with its group, in one access. One LONG key has two
    // lookups, its items' with the shortcuts and without (ShortcutMode); two INT keys one.
    String one = kernel(spec(List.of(ColumnType.LONG), Kind.SUM), false).ptx();
    String two = kernel(spec(List.of(ColumnType.INT, ColumnType.INT), Kind.SUM), true).ptx();
    String string = kernel(spec(List.of(ColumnType.STRING), Kind.SUM), false).ptx();
    assertEquals(2, count(one, "ld.relaxed.gpu.global.v2.u64"));
    assertEquals(1, count(two, "ld.relaxed.gpu.global.v2.u64"));
    assertEquals(1, count(string, "ld.relaxed.gpu.global.v2.u64"));
    // Each lookup reaches its group from the claim and from the keys' compare; one fixed-width
    // key also where the hashes are equal, before the group's key is read.
    assertEquals(3 * 2, count(one, "bra $L_group_stored"));
    assertEquals(2, count(two, "bra $L_group_stored"));
    assertEquals(2, count(string, "bra $L_group_stored"));
    // Where the slot's hash is not yet written, a lookup reads the group's (one .u64), then the
    // group's values: one .u64 a fixed-width key; a string's heap offset, then its bytes a word
    // at a time (one load, in the compare's loop).
    assertEquals(2 * 2, count(one, "ld.global.cg.u64"));
    assertEquals(1 + 2, count(two, "ld.global.cg.u64"));
    assertEquals(3, count(string, "ld.global.cg.u64"));
  }

  @Test
  void theValueHashedAsNullIsNeverDecidedByTheHash() throws Exception {
    // HashKeys hashes NULL as the value kNullKeyHash + kNullKeySalt: a row of that value (or a
    // NULL one) compares the group's key, also where the kernel's key cannot be NULL (the table
    // may hold the NULL group of an earlier batch's), in both lookups of each kernel.
    String nullLike = Long.toString(0x9e3779b97f4a7c15L + 0x51ed270b27L);
    for (boolean nullable : new boolean[] {false, true}) {
      String ptx = kernel(spec(List.of(ColumnType.LONG), Kind.SUM), nullable).ptx();
      assertTrue(count(ptx, "setp.ne.u64") > 0);
      assertEquals(count(ptx, "ld.relaxed.gpu.global.v2.u64"), count(ptx, ", " + nullLike + ";"),
          "nullable " + nullable);
    }
  }

  @Test
  void aFixedWidthKeysNullFlagIsReadOnlyWhereTheValuesAreBothZero() throws Exception {
    // Two nullable INT keys: each probe reads the group's two values; each key's null flag
    // only after its value equals the row's stored value (0 when NULL) and is 0.
    String ptx = kernel(spec(List.of(ColumnType.INT, ColumnType.INT), Kind.SUM), true).ptx();
    assertEquals(2, count(ptx, "ld.global.cg.u8"));
    String flagRead = "(?s).*\tld\\.global\\.cg\\.u64 (%rd\\d+), \\[%rd\\d+\\];\n.*"
        + "\tsetp\\.ne\\.u64 %p\\d+, \\1, %rd\\d+;\n\t@%p\\d+ bra \\$L_group_next_\\d+;\n"
        + "\tsetp\\.ne\\.u64 (%p\\d+), \\1, 0;\n\t@\\2 bra \\$L_key\\d_equal_\\d+;\n"
        + "(\t[^\n]*\n){0,4}\tld\\.global\\.cg\\.u8 .*";
    assertTrue(ptx.matches(flagRead), "no flag read behind the value's compares");
    // A string key's flag is read with its value and length (its value is a heap offset).
    assertEquals(1, count(kernel(spec(List.of(ColumnType.STRING), Kind.SUM), true).ptx(),
        "ld.global.cg.u8"));
  }

  @Test
  @RequiresPtxCompiler
  void theKernelsCompileClean() throws Exception {
    for (boolean nullable : new boolean[] {false, true}) {
      for (Kind[] kinds : List.of(new Kind[] {Kind.SUM, Kind.MIN, Kind.MAX},
          new Kind[] {Kind.SUM, Kind.SUM, Kind.MIN, Kind.MAX})) {
        GeneratedKernel kernel = kernel(spec(List.of(ColumnType.LONG), kinds), nullable);
        TestPtx.assertCompilesClean(kernel, "sm_90");
      }
    }
  }
}
