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
import dev.tessera.gpu.join.JoinTable;
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
    int probedTables = 0;
    try (Backend host = Backends.open(BackendKind.HOST_REFERENCE, RuntimeOptions.defaults());
        GpuStream stream = host.newStream()) {
      for (int i = 0; i < PROGRAMS; i++) {
        Random random = new Random(i);
        List<ColumnType> types = RandomBatches.randomTypes(random, 1 + random.nextInt(5));
        // Half the programs probe join tables too; the other half are what generate() makes.
        RandomPrograms.Probing probing = i % 2 == 0
            ? RandomPrograms.generateProbing(types, random.nextBoolean(), random.nextLong())
            : new RandomPrograms.Probing(
                RandomPrograms.generate(types, random.nextBoolean(), random.nextLong()),
                List.of());
        Program program = probing.program();
        probedTables += program.tables().size();
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
        List<JoinTable> tables = probing.buildTables(host, stream);
        try (ColumnBatch<HostColumn> input =
                 RandomBatches.build(types, ROWS, random.nextLong(), host.stagingAllocator());
            ColumnBatch<DeviceColumn> onDevice =
                ColumnTransfer.toDeviceAsync(input, host.deviceMemory(), stream);
            ColumnBatch<DeviceColumn> out = host.programKernel().run(program, tables,
                onDevice, host.deviceMemory(), stream)) {
          assertTrue(out.rowCount() <= ROWS, "more rows out than in");
          results++;
        } catch (RowErrorException e) {
          errors++;
        } catch (RuntimeException e) {
          throw new AssertionError("seed " + i + " on " + types + ":\n" + program.disassemble(), e);
        } finally {
          tables.forEach(JoinTable::close);
        }
      }
      assertEquals(0, host.deviceMemory().bytesInUse(), "device memory leaked");
      assertEquals(0, host.stagingAllocator().getAllocatedMemory(), "staging leaked");
    }
    assertEquals(EnumSet.allOf(Opcode.class), seen, "opcodes the generator never emitted");
    assertTrue(errors > PROGRAMS / 20 && results > PROGRAMS / 2,
        errors + " programs raised errors, " + results + " did not");
    assertTrue(filtered > PROGRAMS / 2 && filtered < PROGRAMS, filtered + " had filters");
    assertTrue(stringOutputs > PROGRAMS / 20, stringOutputs + " had string outputs");
    assertTrue(probedTables > PROGRAMS / 10, probedTables + " join tables probed");
    assertTrue(ansi > PROGRAMS / 3 && ansi < 2 * PROGRAMS / 3, ansi + " were ANSI");
  }
}
