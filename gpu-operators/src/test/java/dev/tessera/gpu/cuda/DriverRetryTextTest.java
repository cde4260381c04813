package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tessera.gpu.bench.WideProjectionBench;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.codegen.CompiledKernel;
import dev.tessera.gpu.codegen.FilterProjectGenerator;
import dev.tessera.gpu.codegen.GeneratedKernel;
import dev.tessera.gpu.codegen.GeneratedModule;
import dev.tessera.gpu.codegen.InputSpec;
import dev.tessera.gpu.codegen.PtxCompiler;
import dev.tessera.gpu.expr.Program;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Without a GPU: what the driver's JIT is given to retry a kernel the in-jar compiler left stack
 * or spills. WideProjectionBench's kernel is such a one: its first two forms need more than 128
 * registers, so the in-jar compile uses its last form (8 bytes of spills at -O3). With {@link
 * GeneratedKernels#DRIVER_RETRIES_USED_FORM_PROPERTY} the driver retries that form; without it,
 * the kernel's first form, as before.
 */
class DriverRetryTextTest {
  @AfterEach
  void clearSwitch() {
    System.clearProperty(GeneratedKernels.DRIVER_RETRIES_USED_FORM_PROPERTY);
  }

  @Test
  void theDriverRetriesTheFormTheInJarCompileUsedWhereTheSwitchSaysSo() throws Exception {
    assumeTrue(PtxCompiler.available(), PtxCompiler::unavailableReason);
    Program program = WideProjectionBench.program();
    List<InputSpec> inputs = program.inputTypes().stream()
        .map(t -> new InputSpec(t, Encoding.PLAIN, false)).toList();
    GeneratedKernel kernel = FilterProjectGenerator.generate(program, inputs);
    CompiledKernel compiled = GeneratedModule.compile(kernel, "sm_90");
    GeneratedKernel last = kernel;
    while (last.leaner() != null) {
      last = last.leaner();
    }
    assertEquals(GeneratedModule.text(last), compiled.ptx(), "not the last form compiled");
    assertNotEquals(GeneratedModule.text(kernel), compiled.ptx());

    assertEquals(GeneratedModule.text(kernel),
        GeneratedKernels.driverRetryText(kernel, compiled));
    System.setProperty(GeneratedKernels.DRIVER_RETRIES_USED_FORM_PROPERTY, "true");
    assertEquals(compiled.ptx(), GeneratedKernels.driverRetryText(kernel, compiled));

    byte[] image = GeneratedKernels.driverImage(compiled.ptx());
    assertEquals(0, image[image.length - 1], "not NUL-terminated");
    assertEquals(GeneratedModule.withMaxRegisters(compiled.ptx()),
        new String(image, 0, image.length - 1, StandardCharsets.US_ASCII));
  }
}
