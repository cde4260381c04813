package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Reading ptxas info logs, as the in-jar compiler and command-line ptxas write them. */
class PtxasLogTest {

  /** nvPTXCompiler 12.0 (JCuda 12.6.0), two entries, one calling a .func out of line. */
  private static final String IN_JAR_LOG = """
      ptxas info    : 0 bytes gmem
      ptxas info    : Compiling entry function 'tessera_exp_pointer' for 'sm_90'
      ptxas info    : Function properties for tessera_exp_pointer
      ptxas         .     8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
      ptxas info    : Used 20 registers, 16 bytes smem
      ptxas info    : Function properties for tessera_block_exclusive_sum
      ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
      ptxas info    : Compiling entry function 'tessera_add' for 'sm_80'
      ptxas info    : Function properties for tessera_add
      ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
      ptxas info    : Used 12 registers, 380 bytes cmem[0]
      """;

  /** ptxas 13.0 on the command line: frame lines indented, barriers and cumulative stack. */
  private static final String PTXAS_13_LOG = """
      ptxas info    : 0 bytes gmem
      ptxas info    : Compiling entry function 'tessera_spilly' for 'sm_90'
      ptxas info    : Function properties for tessera_spilly
          40 bytes stack frame, 24 bytes spill stores, 16 bytes spill loads
      ptxas info    : Used 255 registers, used 1 barriers, 40 bytes cumulative stack size, 4096 bytes smem
      ptxas info    : Compile time = 11.651 ms
      ptxas warning : Registers are spilled to local memory in function 'tessera_spilly'
      """;

  @Test
  void readsEachEntryWithItsFrameRegistersSharedMemoryAndCallees() {
    List<CompileReport> reports = PtxasLog.parse(IN_JAR_LOG, 1234);

    assertEquals(2, reports.size());
    CompileReport pointer = reports.get(0);
    assertEquals("tessera_exp_pointer", pointer.function());
    assertEquals(20, pointer.registers());
    assertEquals(8, pointer.stackFrameBytes());
    assertEquals(16, pointer.sharedMemoryBytes());
    assertEquals(List.of(new FunctionFrame("tessera_block_exclusive_sum", 0, 0, 0)),
        pointer.callees());
    assertEquals(1234, pointer.compileNanos());
    assertEquals(IN_JAR_LOG, pointer.infoLog());
    assertFalse(pointer.clean());

    CompileReport add = reports.get(1);
    assertEquals("tessera_add", add.function());
    assertEquals(12, add.registers());
    assertEquals(0, add.sharedMemoryBytes());
    assertTrue(add.callees().isEmpty());
    assertTrue(add.clean());
  }

  @Test
  void readsCommandLinePtxasToo() {
    CompileReport spilly = PtxasLog.parse(PTXAS_13_LOG, 0).get(0);

    assertEquals(new FunctionFrame("tessera_spilly", 40, 24, 16), spilly.frame());
    assertEquals(255, spilly.registers());
    assertEquals(4096, spilly.sharedMemoryBytes());
    assertFalse(spilly.clean());
  }

  @Test
  void aCalleesStackMakesTheEntryUnclean() {
    String log = """
        ptxas info    : Compiling entry function 'tessera_caller' for 'sm_90'
        ptxas info    : Function properties for tessera_caller
        ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
        ptxas info    : Used 20 registers
        ptxas info    : Function properties for tessera_helper
        ptxas         .     16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
        """;

    CompileReport caller = PtxasLog.parse(log, 0).get(0);

    assertEquals(0, caller.stackFrameBytes());
    assertEquals(new FunctionFrame("tessera_helper", 16, 0, 0), caller.callees().get(0));
    assertFalse(caller.clean());
  }

  @Test
  void aModuleWithoutEntriesHasNoReports() {
    assertTrue(PtxasLog.parse("ptxas info    : 0 bytes gmem\n", 0).isEmpty());
    assertTrue(PtxasLog.parse("", 0).isEmpty());
  }
}
