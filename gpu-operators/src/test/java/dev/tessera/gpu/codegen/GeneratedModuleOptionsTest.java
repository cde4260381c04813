package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The ptxas options a generated kernel's compiles take: {@link GeneratedModule#DFOR_OPTION} for
 * one that decodes GPU-DFOR tiles (whatever other options a compile adds), none for the others.
 */
class GeneratedModuleOptionsTest {
  private static GeneratedKernel projection(Encoding encoding) throws Exception {
    List<ColumnType> types = Collections.nCopies(3, ColumnType.INT);
    return FilterProjectGenerator.generate(ProgramBuilder.identity(types, false),
        Collections.nCopies(3, new InputSpec(ColumnType.INT, encoding, false)));
  }

  @Test
  void aKernelThatDecodesGpuDforTilesCompilesWithoutTheOptimizersConstants() throws Exception {
    GeneratedKernel dfor = projection(Encoding.DFOR);
    assertTrue(GeneratedModule.decodesDforTiles(dfor));
    assertEquals(List.of(GeneratedModule.DFOR_OPTION), GeneratedModule.options(dfor, List.of()));
    assertEquals(List.of("-O1", GeneratedModule.DFOR_OPTION),
        GeneratedModule.options(dfor, List.of("-O1")));
  }

  @Test
  void otherKernelsTakeOnlyTheirCompilesOptions() throws Exception {
    for (Encoding encoding : List.of(Encoding.PLAIN, Encoding.FOR)) {
      GeneratedKernel kernel = projection(encoding);
      assertFalse(GeneratedModule.decodesDforTiles(kernel), encoding.toString());
      assertEquals(List.of(), GeneratedModule.options(kernel, List.of()));
      assertEquals(List.of("-O1"), GeneratedModule.options(kernel, List.of("-O1")));
    }
  }
}
