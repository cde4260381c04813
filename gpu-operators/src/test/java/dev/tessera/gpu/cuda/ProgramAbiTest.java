package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.codec.GpuForLayout;
import dev.tessera.gpu.column.TypeId;
import dev.tessera.gpu.expr.Comparison;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.RowError;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The numbers and layouts the CUDA kernels share with Java, read from the CUDA sources: opcode
 * codes, row error codes, comparison codes, type ordinals, the register limit, the descriptor
 * and status layouts and the tile geometry. Needs no GPU; skipped where the sources are not
 * beside the tests (the GPU bundle runs the test jar without a checkout).
 */
class ProgramAbiTest {
  private static String program;
  private static String filterProject;
  private static String hashAggregate;
  private static String config;
  private static String gpufor;

  @BeforeAll
  static void readSources() throws IOException {
    Path kernels = findNativeKernels();
    assumeTrue(kernels != null, "native-kernels sources not found from "
        + Path.of("").toAbsolutePath());
    program = Files.readString(kernels.resolve("include/tessera/program.cuh"));
    filterProject = Files.readString(kernels.resolve("kernels/filter_project.cu"));
    hashAggregate = Files.readString(kernels.resolve("include/tessera/hash_aggregate.cuh"));
    config = Files.readString(kernels.resolve("include/tessera/config.cuh"));
    gpufor = Files.readString(kernels.resolve("include/tessera/gpufor.cuh"));
  }

  private static Path findNativeKernels() {
    for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
      Path candidate = dir.resolve("native-kernels");
      if (Files.isRegularFile(candidate.resolve("include/tessera/program.cuh"))) {
        return candidate;
      }
    }
    return null;
  }

  /** NAME = number entries of "enum class NAME ... { ... };" in source. */
  private static Map<String, Integer> cudaEnum(String source, String name) {
    Matcher block = Pattern.compile("enum class " + name + "\\b[^{]*\\{([^}]*)\\}").matcher(source);
    if (!block.find()) {
      throw new AssertionError("no enum class " + name + " in the CUDA source");
    }
    Map<String, Integer> entries = new LinkedHashMap<>();
    Matcher entry = Pattern.compile("([A-Z_0-9]+)\\s*=\\s*(\\d+)").matcher(block.group(1));
    while (entry.find()) {
      entries.put(entry.group(1), Integer.parseInt(entry.group(2)));
    }
    return entries;
  }

  private static int cudaConstant(String source, String name) {
    Matcher m = Pattern.compile("constexpr int " + name + " = ([^;]+);").matcher(source);
    if (!m.find()) {
      throw new AssertionError("no constexpr int " + name + " in the CUDA source");
    }
    String value = m.group(1).trim();
    Matcher product = Pattern.compile("(\\w+) \\* (\\w+)").matcher(value);
    if (product.matches()) {
      return cudaConstant(source, product.group(1)) * cudaConstant(source, product.group(2));
    }
    return Integer.parseInt(value);
  }

  @Test
  void opcodesMatchOpcodeJava() {
    Map<String, Integer> expected = new LinkedHashMap<>();
    for (Opcode op : Opcode.values()) {
      expected.put(op.name(), op.code());
    }
    assertEquals(expected, cudaEnum(program, "Opcode"));
  }

  @Test
  void rowErrorsComparisonsAndTypesMatchJava() {
    Map<String, Integer> errors = new LinkedHashMap<>();
    for (RowError e : RowError.values()) {
      errors.put(e.name(), e.code());
    }
    assertEquals(errors, cudaEnum(program, "RowError"));
    Map<String, Integer> comparisons = new LinkedHashMap<>();
    for (Comparison c : Comparison.values()) {
      comparisons.put(c.name(), c.code());
    }
    assertEquals(comparisons, cudaEnum(program, "Comparison"));
    Map<String, Integer> types = new LinkedHashMap<>();
    for (TypeId t : TypeId.values()) {
      types.put(t.name(), t.ordinal());
    }
    assertEquals(types, cudaEnum(program, "TypeId"));
  }

  @Test
  void aggregateKindsMatchAggregateFunctionJava() {
    Map<String, Integer> kinds = new LinkedHashMap<>();
    for (dev.tessera.gpu.agg.AggregateFunction.Kind k
        : dev.tessera.gpu.agg.AggregateFunction.Kind.values()) {
      kinds.put(k.name(), k.ordinal());
    }
    assertEquals(kinds, cudaEnum(hashAggregate, "AggregateKind"));
  }

  @Test
  void programLimitsMatch() {
    assertEquals(Program.MAX_REGISTERS, cudaConstant(program, "kMaxRegisters"));
    assertEquals(Program.WORDS, cudaConstant(program, "kInstructionWords"));
  }

  @Test
  void descriptorAndStatusLayoutsMatch() {
    assertEquals(ProgramPlan.INPUT_COLUMN_BYTES, cudaConstant(program, "kInputColumnBytes"));
    assertEquals(CudaFilterProject.OUTPUT_COLUMN_BYTES,
        cudaConstant(filterProject, "kOutputColumnBytes"));
    assertEquals(CudaFilterProject.STATUS_HEADER_BYTES,
        cudaConstant(filterProject, "kStatusHeaderBytes"));
    assertEquals(CudaFilterProject.OUTPUT_STATUS_BYTES,
        cudaConstant(filterProject, "kOutputStatusBytes"));
    assertEquals(CudaFilterProject.ERROR_ROW_SHIFT, cudaConstant(program, "kErrorRowShift"));
  }

  @Test
  void gpuForLayoutMatches() {
    assertEquals(GpuForLayout.BLOCK_VALUES, cudaConstant(gpufor, "kBlockValues"));
    assertEquals(GpuForLayout.MINIBLOCK_VALUES, cudaConstant(gpufor, "kMiniblockValues"));
    assertEquals(GpuForLayout.SET_BLOCKS, cudaConstant(gpufor, "kSetBlocks"));
    assertEquals(1 << cudaConstant(gpufor, "kBlockShift"), GpuForLayout.BLOCK_VALUES);
    assertEquals(Encoding.PLAIN.ordinal(), cudaConstant(gpufor, "kPlain"));
    assertEquals(Encoding.FOR.ordinal(), cudaConstant(gpufor, "kFor"));
    assertEquals(Encoding.DFOR.ordinal(), cudaConstant(gpufor, "kDfor"));
    // A GPU-DFOR set is one kernel tile (LoadDforTile decodes a set per tile).
    assertEquals(GpuForLayout.SET_VALUES, LaunchShape.TILE_ITEMS);
    assertEquals(GpuForLayout.BLOCK_VALUES, LaunchShape.BLOCK_THREADS);
  }

  @Test
  void tileGeometryMatchesLaunchShape() {
    assertEquals(LaunchShape.BLOCK_THREADS, cudaConstant(config, "kBlockThreads"));
    assertEquals(LaunchShape.ITEMS_PER_THREAD, cudaConstant(config, "kItemsPerThread"));
    assertEquals(LaunchShape.TILE_ITEMS, cudaConstant(config, "kTileItems"));
  }
}
