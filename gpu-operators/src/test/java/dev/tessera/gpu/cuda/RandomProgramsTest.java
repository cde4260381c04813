package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

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
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.RowErrorException;
import java.util.EnumSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The generator behind CudaFilterProjectTest, checked where there is no GPU: its programs pass
 * ProgramChecks (so the CUDA backend will run them), run on the host reference without any
 * exception but RowErrorException, and together cover every opcode, filters, string outputs,
 * errors and error-free runs.
 */
class RandomProgramsTest {
  private static final int PROGRAMS = 400;
  private static final int ROWS = 600;

  @Test
  void generatedProgramsAreWellFormedAndCoverTheInstructionSet() {
    Set<Opcode> seen = EnumSet.noneOf(Opcode.class);
    int errors = 0;
    int results = 0;
    int filtered = 0;
    int stringOutputs = 0;
    int ansi = 0;
    try (Backend host = Backends.open(BackendKind.HOST_REFERENCE, RuntimeOptions.defaults());
        GpuStream stream = host.newStream()) {
      for (int i = 0; i < PROGRAMS; i++) {
        Random random = new Random(i);
        List<ColumnType> types = RandomBatches.randomTypes(random, 1 + random.nextInt(5));
        Program program = RandomPrograms.generate(types, random.nextBoolean(), random.nextLong());
        for (int pc = 0; pc < program.code().length; pc += Program.WORDS) {
          seen.add(Opcode.ofCode(program.code()[pc]));
        }
        filtered += program.hasFilter() ? 1 : 0;
        ansi += program.ansi() ? 1 : 0;
        stringOutputs += program.outputs().stream().anyMatch(o -> o.type().isString()) ? 1 : 0;
        try {
          ProgramChecks.check(program);
        } catch (IllegalArgumentException e) {
          fail("seed " + i + ": the generator made a program ProgramChecks refuses: "
              + e.getMessage());
        }
        try (ColumnBatch<HostColumn> input =
                 RandomBatches.build(types, ROWS, random.nextLong(), host.stagingAllocator());
            ColumnBatch<DeviceColumn> onDevice =
                ColumnTransfer.toDeviceAsync(input, host.deviceMemory(), stream);
            ColumnBatch<DeviceColumn> out = host.filterProjectKernel().run(program, onDevice,
                host.deviceMemory(), stream)) {
          assertTrue(out.rowCount() <= ROWS, "more rows out than in");
          results++;
        } catch (RowErrorException e) {
          errors++;
        } catch (RuntimeException e) {
          throw new AssertionError("seed " + i + " on " + types + ":\n" + program.disassemble(), e);
        }
      }
      assertEquals(0, host.deviceMemory().bytesInUse(), "device memory leaked");
      assertEquals(0, host.stagingAllocator().getAllocatedMemory(), "staging leaked");
    }
    // The generator makes programs without join tables; PROBE and LOAD_BUILD need tables and are
    // covered by the join tests (CudaHashJoinDifferentialTest, ProgramChecksJoinTest).
    Set<Opcode> expected = EnumSet.complementOf(EnumSet.of(Opcode.PROBE, Opcode.LOAD_BUILD));
    assertEquals(expected, seen, "opcodes the generator never emitted");
    assertTrue(errors > PROGRAMS / 20 && results > PROGRAMS / 2,
        errors + " programs raised errors, " + results + " did not");
    assertTrue(filtered > PROGRAMS / 2 && filtered < PROGRAMS, filtered + " had filters");
    assertTrue(stringOutputs > PROGRAMS / 20, stringOutputs + " had string outputs");
    assertTrue(ansi > PROGRAMS / 3 && ansi < 2 * PROGRAMS / 3, ansi + " were ANSI");
  }
}
