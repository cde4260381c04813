package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A GROUP BY of one or two dictionary strings as a cached table holds them is found by the
 * keys' code index (CodeGroups): the block's table, the lane's last group and the runs take the
 * index as a LONG key, and a row that misses the table reads the launch's map before the global
 * table. Other keys are not. No GPU (CudaGeneratedEncodedInputTest and CudaEncodedInputTest run
 * such kernels on one).
 */
class CodeGroupsTest {
  private static final String CODE_INDEX = "dictionary strings found by their codes";
  private static final String CODE_GROUP = "dictionary strings' group by their code index";
  private static final String SHORT_TABLE = "a short string as one fixed-width key";
  private static final String RUNS = "every aggregated row of the warp is of its lane's run";

  /** Dictionary string keys (GPU-FOR codes), then a plain LONG value. */
  private static List<InputSpec> inputs(AggregateSpec spec, boolean nullable) {
    List<InputSpec> inputs = new ArrayList<>();
    for (ColumnType type : spec.inputTypes()) {
      inputs.add(new InputSpec(type, type.isString() ? Encoding.FOR : Encoding.PLAIN, nullable));
    }
    return inputs;
  }

  private static AggregateSpec strings(int keys) {
    List<ColumnType> types = new ArrayList<>();
    for (int k = 0; k < keys; k++) {
      types.add(ColumnType.STRING);
    }
    return LocalKeyTableTest.spec(types);
  }

  @Test
  void oneOrTwoDictionaryStringsAreFoundByTheirCodeIndex() throws Exception {
    for (int keys = 1; keys <= CodeGroups.MAX_KEYS; keys++) {
      AggregateSpec spec = strings(keys);
      for (boolean filtered : new boolean[] {false, true}) {
        Program program = AggregateBlockShapeTest.program(spec, filtered);
        for (boolean nullable : new boolean[] {false, true}) {
          String form = keys + " keys, filtered " + filtered + ", nullable " + nullable;
          List<InputSpec> inputs = inputs(spec, nullable);
          int[] expected = keys == 1 ? new int[] {0} : new int[] {0, 1};
          assertArrayEquals(expected, CodeGroups.keyInputs(program, spec, inputs), form);
          assertTrue(AggregateUpdateGenerator.fillsMultiprocessor(program, spec, inputs), form);
          GeneratedKernel kernel = AggregateUpdateGenerator.generate(program, inputs, spec,
              KernelFeatures.forArch("sm_90"));
          String ptx = kernel.ptx();
          assertTrue(ptx.contains(CODE_INDEX), form);
          assertTrue(ptx.contains(CODE_GROUP), form);
          // The index is a LONG key that cannot be NULL: the kernel takes runs as a LONG key's.
          assertTrue(ptx.contains(RUNS), form);
          assertFalse(ptx.contains(SHORT_TABLE), form);
          CompileReport report = TestPtx.assertCompilesClean(kernel, "sm_90");
          assertTrue(report.registers() <= AggregateUpdateGenerator.WHOLE_BLOCK_REGISTERS,
              form + ": " + report.summary());
        }
      }
    }
  }

  @Test
  void aKeyMovedFromItsLoadIsStillItsCode() {
    AggregateSpec spec = strings(2);
    ProgramBuilder b = new ProgramBuilder(spec.inputTypes(), false);
    int first = b.loadColumn(0);
    int second = b.loadColumn(1);
    int moved = b.emitNew(Opcode.MOVE, second, 0, 0);
    int value = b.loadColumn(2);
    Program program = b.build(-1, List.of(new Program.Output(moved, ColumnType.STRING),
        new Program.Output(first, ColumnType.STRING), new Program.Output(value, ColumnType.LONG)));
    assertArrayEquals(new int[] {1, 0}, CodeGroups.keyInputs(program, spec, inputs(spec, true)));
  }

  @Test
  void otherKeysAreNotFoundByTheirCodes() throws Exception {
    AggregateSpec one = strings(1);
    Program identity = AggregateBlockShapeTest.program(one, false);
    // A plain string column has no codes: its short strings are found by key.
    List<InputSpec> plain = one.inputTypes().stream()
        .map(t -> new InputSpec(t, Encoding.PLAIN, false)).toList();
    assertNull(CodeGroups.keyInputs(identity, one, plain));
    String ptx = AggregateUpdateGenerator.generate(identity, plain, one,
        KernelFeatures.forArch("sm_90")).ptx();
    assertFalse(ptx.contains(CODE_INDEX));
    assertTrue(ptx.contains(SHORT_TABLE));
    // GPU-DFOR codes: such kernels keep blocks of 128 threads.
    List<InputSpec> dfor = List.of(new InputSpec(ColumnType.STRING, Encoding.DFOR, false),
        new InputSpec(ColumnType.LONG, Encoding.PLAIN, false));
    assertNull(CodeGroups.keyInputs(identity, one, dfor));
    // A key that is not the load itself: a constant written over the loaded register.
    ProgramBuilder b = new ProgramBuilder(one.inputTypes(), false);
    int key = b.loadColumn(0);
    b.emit(Opcode.LOAD_STRING_CONST, key, 0, 0, 0);
    int value = b.loadColumn(1);
    Program overwritten = b.build(-1, List.of(new Program.Output(key, ColumnType.STRING),
        new Program.Output(value, ColumnType.LONG)));
    assertNull(CodeGroups.keyInputs(overwritten, one, inputs(one, false)));
    // A dictionary string beside a fixed-width key, and three dictionary strings.
    AggregateSpec mixed = LocalKeyTableTest.spec(List.of(ColumnType.STRING, ColumnType.INT));
    assertNull(CodeGroups.keyInputs(AggregateBlockShapeTest.program(mixed, false), mixed,
        inputs(mixed, false)));
    AggregateSpec three = strings(3);
    assertNull(CodeGroups.keyInputs(AggregateBlockShapeTest.program(three, false), three,
        inputs(three, false)));
  }

  @Test
  void aKeysStringsAreDecodedWhereARowLooksUnlessTheProgramReadsThem() throws Exception {
    AggregateSpec two = strings(2);
    Program identity = AggregateBlockShapeTest.program(two, false);
    int[] keys = CodeGroups.keyInputs(identity, two, inputs(two, true));
    assertArrayEquals(new boolean[] {true, true},
        CodeGroups.decodedAtLookup(identity, two, keys));
    String ptx = AggregateUpdateGenerator.generate(identity, inputs(two, true), two,
        KernelFeatures.forArch("sm_90")).ptx();
    assertTrue(ptx.contains("key 0's string, which its load left coded"));
    assertTrue(ptx.contains("key 1's string, which its load left coded"));
    // The filter reads the first key's string (its length): it is decoded where it is loaded.
    List<ColumnType> types = two.inputTypes();
    ProgramBuilder b = new ProgramBuilder(types, false);
    int first = b.loadColumn(0);
    int second = b.loadColumn(1);
    int value = b.loadColumn(2);
    int keep = b.emitNew(Opcode.CMP_INT, b.emitNew(Opcode.LENGTH, first, 0, 0),
        b.loadConstant(0), dev.tessera.gpu.expr.Comparison.GT.code());
    Program read = b.build(keep, List.of(new Program.Output(first, ColumnType.STRING),
        new Program.Output(second, ColumnType.STRING), new Program.Output(value, ColumnType.LONG)));
    assertArrayEquals(new boolean[] {false, true}, CodeGroups.decodedAtLookup(read, two,
        new int[] {0, 1}));
    // The second key's string is also an input of the aggregation's functions.
    ProgramBuilder c = new ProgramBuilder(types, false);
    int k1 = c.loadColumn(0);
    int k2 = c.loadColumn(1);
    int v = c.loadColumn(2);
    Program asInput = c.build(-1, List.of(new Program.Output(k1, ColumnType.STRING),
        new Program.Output(k2, ColumnType.STRING), new Program.Output(v, ColumnType.LONG),
        new Program.Output(k2, ColumnType.STRING)));
    List<ColumnType> withInput = new ArrayList<>(types);
    withInput.add(ColumnType.STRING);
    AggregateSpec spec = new AggregateSpec(withInput, 2, List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.COUNT, 3, ColumnType.LONG)), false);
    assertArrayEquals(new boolean[] {true, false}, CodeGroups.decodedAtLookup(asInput, spec,
        new int[] {0, 1}));
  }

  @Test
  void theTableHoldsTheIndexAsOneLong() {
    AggregateSpec two = strings(2);
    AggregateSpec table = CodeGroups.tableSpec(two);
    assertEquals(1, table.keyCount());
    assertEquals(List.of(ColumnType.LONG, ColumnType.LONG), table.inputTypes());
    for (int f = 0; f < two.functions().size(); f++) {
      AggregateFunction fn = two.functions().get(f);
      AggregateFunction moved = table.functions().get(f);
      assertEquals(fn.kind(), moved.kind());
      assertEquals(fn.kind() == Kind.COUNT_ROWS ? -1 : fn.input() - 1, moved.input());
    }
    AggregateSpec longs = LocalKeyTableTest.spec(List.of(ColumnType.LONG));
    assertEquals(LocalKeyTable.bytes(longs, 2048), LocalKeyTable.bytes(two, 2048, true, true));
    assertEquals(0, LocalKeyTable.bytes(two, 2048, true, false));
  }

  @Test
  void theMapHasAnEntryAnIndexUpToItsLimit() {
    assertEquals(new CodeGroups.Shape(11, 1), CodeGroups.shape(new long[] {11}));
    assertEquals(new CodeGroups.Shape(33, 3), CodeGroups.shape(new long[] {11, 3}));
    long half = 1L << 11;
    assertEquals(new CodeGroups.Shape(CodeGroups.MAX_ENTRIES, half),
        CodeGroups.shape(new long[] {half, half}));
    // Past the limit, no map; the index keeps its shape.
    assertEquals(new CodeGroups.Shape(0, half), CodeGroups.shape(new long[] {half * 2, half}));
    assertEquals(new CodeGroups.Shape(0, 1L << 31),
        CodeGroups.shape(new long[] {1L << 31, 1L << 31}));
    // A kernel whose keys are not found by their codes: no map.
    assertEquals(new CodeGroups.Shape(0, 1), CodeGroups.shape(null, List.of()));
  }
}
