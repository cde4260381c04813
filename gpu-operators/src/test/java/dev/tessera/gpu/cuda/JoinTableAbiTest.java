package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Field;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The join table descriptor CudaHashJoin writes and program.cuh / hash_join.cu read (struct
 * JoinTableView): every byte offset the Java side names (VIEW_*) is the offset of the member of
 * the same snake_case name, the sizes agree, and every kernel CudaHashJoin launches exists as an
 * extern "C" entry point. Runs without a GPU.
 */
class JoinTableAbiTest {
  private static final Pattern MEMBER = Pattern.compile(
      "^\\s*(unsigned\\s+long\\s+long|long\\s+long|int)\\s+(\\w+)(?:\\[(\\d+)\\])?;",
      Pattern.MULTILINE);

  private static String read(String relative) throws IOException {
    return NativeSources.read(relative);
  }


  /** Member name to byte offset (C layout: each member aligned to its size); "#bytes": size. */
  private static Map<String, Integer> struct(String source, String name) {
    int start = source.indexOf("struct " + name + " {");
    assertTrue(start >= 0, "struct " + name);
    String body = source.substring(start, source.indexOf("};", start));
    Map<String, Integer> members = new LinkedHashMap<>();
    int offset = 0;
    Matcher m = MEMBER.matcher(body);
    while (m.find()) {
      int size = m.group(1).equals("int") ? 4 : 8;
      offset = (offset + size - 1) / size * size;
      members.put(m.group(2), offset);
      offset += size * (m.group(3) == null ? 1 : Integer.parseInt(m.group(3)));
    }
    members.put("#bytes", (offset + 7) / 8 * 8);
    return members;
  }

  @Test
  void joinTableViewMatchesTheJavaOffsets() throws Exception {
    Map<String, Integer> view = struct(read("native-kernels/include/tessera/program.cuh"),
        "JoinTableView");
    assertEquals(CudaJoinTable.TABLE_VIEW_BYTES, view.get("#bytes"), "JoinTableView size");
    int checked = 0;
    for (Field f : CudaJoinTable.class.getDeclaredFields()) {
      if (!f.getName().startsWith("VIEW_") || f.getType() != int.class) {
        continue;
      }
      String member = f.getName().substring("VIEW_".length()).toLowerCase();
      assertTrue(view.containsKey(member), f.getName() + " names no JoinTableView member");
      f.setAccessible(true);
      assertEquals(view.get(member), f.getInt(null), f.getName());
      checked++;
    }
    assertEquals(16, checked, "every JoinTableView member has a Java offset");
  }

  @Test
  void theKernelGeneratorReadsTheSameOffsets() throws Exception {
    Map<String, Integer> view = struct(read("native-kernels/include/tessera/program.cuh"),
        "JoinTableView");
    Class<?> emitter = Class.forName("dev.tessera.gpu.codegen.ProgramEmitter");
    int checked = 0;
    for (Field f : emitter.getDeclaredFields()) {
      if (!f.getName().startsWith("TABLE_") || f.getName().equals("TABLE_VIEW_BYTES")) {
        continue;
      }
      String member = f.getName().substring("TABLE_".length()).toLowerCase();
      assertTrue(view.containsKey(member), f.getName() + " names no JoinTableView member");
      f.setAccessible(true);
      assertEquals(view.get(member), f.getInt(null), "ProgramEmitter." + f.getName());
      checked++;
    }
    assertTrue(checked >= 8, "ProgramEmitter's JoinTableView offsets: " + checked);
  }

  @Test
  void viewSizeConstantMatches() throws Exception {
    Matcher m = Pattern.compile("constexpr int kJoinTableViewBytes = (\\d+);")
        .matcher(read("native-kernels/include/tessera/program.cuh"));
    assertTrue(m.find());
    assertEquals(CudaJoinTable.TABLE_VIEW_BYTES, Integer.parseInt(m.group(1)));
  }

  @Test
  void everyLaunchedKernelExists() throws Exception {
    String source = read("native-kernels/kernels/hash_join.cu");
    for (Field f : CudaHashJoin.class.getDeclaredFields()) {
      if (f.getName().endsWith("_KERNEL") && f.getType() == String.class) {
        f.setAccessible(true);
        String name = (String) f.get(null);
        Pattern entry = Pattern.compile("(?s)extern \"C\" __global__[^;{]{0,200}?\\b" + name
            + "\\(");
        assertTrue(entry.matcher(source).find(), name + " is not a kernel of hash_join.cu");
      }
    }
    assertTrue(read("native-kernels/kernels/all.cu").contains("#include \"hash_join.cu\""));
  }

  @Test
  void slotsAreAPowerOfTwoAtLeastFourTimesTheRowsOrTwiceForHugeTables() {
    for (long rows : new long[] {0, 1, 2, 3, 1000, 1 << 28, (1 << 28) + 1,
        CudaHashJoin.MAX_BUILD_ROWS}) {
      long slots = CudaHashJoin.slotCount(rows);
      assertEquals(0, slots & (slots - 1), "power of two for " + rows);
      assertTrue(slots >= (rows <= 1 << 28 ? 4 : 2) * rows && slots >= 2, "room for " + rows);
      assertTrue(slots <= Integer.MAX_VALUE, "int32 slot numbers for " + rows);
    }
    assertEquals(4096, CudaHashJoin.slotCount(1000));
  }

  @Test
  void chainsAscendAndCountEachKeysRows() {
    // Rows 0, 2, 5 share a key; 1 has a NULL key; 3 and 4 share another.
    CudaHashJoin.Chains chains = CudaHashJoin.Chains.of(new int[] {0, -1, 0, 3, 3, 0}, true);
    org.junit.jupiter.api.Assertions.assertArrayEquals(new int[] {2, -1, 5, 4, -1, -1},
        chains.next());
    org.junit.jupiter.api.Assertions.assertArrayEquals(new int[] {3, 0, 0, 2, 0, 0},
        chains.groupSizes());
    assertEquals(2, chains.distinctKeys());
  }

  @Test
  void chainsRejectWhatNoCorrectKernelReports() {
    org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
        () -> CudaHashJoin.Chains.of(new int[] {1, 1}, true)); // a head above its row
    org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
        () -> CudaHashJoin.Chains.of(new int[] {0, 1}, true)); // no duplicates, flagged
    org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
        () -> CudaHashJoin.Chains.of(new int[] {0, 0}, false)); // duplicates, unflagged
  }
}
