package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertTrue;

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
import dev.tessera.gpu.expr.HostInterpreter;
import dev.tessera.gpu.expr.HostProbeTable;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.RowError;
import dev.tessera.gpu.join.JoinTable;
import dev.tessera.gpu.memory.DeviceBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.arrow.memory.util.MemoryUtil;
import org.junit.jupiter.api.Test;

/**
 * {@link Opcode#raisesNoErrorOfItsOwn} against the host reference: in random ANSI programs (with
 * and without join probes) over random batches, a register holds an error only where an
 * instruction that may raise one (or an operand of it, transitively) wrote it. The generated
 * kernels skip the right operand of a filter's AND on the strength of that list
 * (ProgramEmitter.keepOnly), so an opcode wrongly on it could hide an error Spark raises. No GPU.
 */
class OwnErrorsTest {
  private static final int PROGRAMS = 600;
  private static final int ROWS = 400;

  @Test
  void onlyInstructionsThatMayRaiseAnErrorPutOneInARegister() {
    int errors = 0;
    try (Backend host = Backends.open(BackendKind.HOST_REFERENCE, RuntimeOptions.defaults());
        GpuStream stream = host.newStream()) {
      for (int i = 0; i < PROGRAMS; i++) {
        Random random = new Random(7_000 + i);
        List<ColumnType> types = RandomBatches.randomTypes(random, 1 + random.nextInt(5));
        RandomPrograms.Probing probing = i % 2 == 0
            ? RandomPrograms.generateProbing(types, true, random.nextLong())
            : new RandomPrograms.Probing(RandomPrograms.generate(types, true, random.nextLong()),
                List.of());
        Program program = probing.program();
        boolean[] mayErr = mayHoldAnError(program);
        List<JoinTable> tables = probing.buildTables(host, stream);
        List<HostProbeTable> probeTables = new ArrayList<>();
        for (JoinTable t : tables) {
          probeTables.add((HostProbeTable) t);
        }
        try (ColumnBatch<HostColumn> input =
                RandomBatches.build(types, ROWS, random.nextLong(), host.stagingAllocator());
            ColumnBatch<DeviceColumn> onDevice =
                ColumnTransfer.toDeviceAsync(input, host.deviceMemory(), stream);
            DeviceBuffer strings = DeviceBuffer.allocate(host.deviceMemory(),
                Math.max(1, program.strings().length))) {
          MemoryUtil.copyToMemory(program.strings(), 0, strings.address(),
              program.strings().length);
          HostInterpreter interpreter = new HostInterpreter(program, onDevice.columns(),
              probeTables, strings.address());
          for (int row = 0; row < ROWS; row++) {
            interpreter.evaluate(row);
            for (int r = 0; r < program.registerCount(); r++) {
              if (interpreter.error(r) != RowError.NONE) {
                errors++;
                assertTrue(mayErr[r], "seed " + (7_000 + i) + ", row " + row + ": r" + r
                    + " holds " + interpreter.error(r) + ", but no instruction that may raise"
                    + " an error wrote it or what it reads: " + program);
              }
            }
          }
        } finally {
          for (JoinTable t : tables) {
            t.close();
          }
        }
      }
    }
    assertTrue(errors > 0, "the programs raised no error at all: nothing was checked");
  }

  /**
   * Per register, after the whole program: whether an instruction that may raise an error wrote
   * it, or read a register that may hold one. Every immediate operand is taken for a register
   * too, and a PROBE reads every register before it: that can only mark more registers.
   */
  private static boolean[] mayHoldAnError(Program program) {
    boolean[] mayErr = new boolean[Math.max(1, program.registerCount())];
    int[] code = program.code();
    for (int pc = 0; pc < code.length; pc += Program.WORDS) {
      Opcode op = Opcode.ofCode(code[pc]);
      boolean err = !op.raisesNoErrorOfItsOwn();
      if (op == Opcode.PROBE) {
        for (boolean e : mayErr) {
          err |= e;
        }
      }
      for (int k = 2; k <= 4; k++) {
        int operand = code[pc + k];
        if (operand >= 0 && operand < mayErr.length) {
          err |= mayErr[operand];
        }
      }
      mayErr[code[pc + 1]] = err;
    }
    return mayErr;
  }
}
