package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.sort.TopKSpec;
import java.io.IOException;
import java.lang.reflect.Field;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * What CudaTopK shares with top_k.cu: the tile geometry, the sizes of a sort key's descriptor and
 * of an ordered key, the most sort keys, the positions' range, and every kernel it launches as
 * an extern "C" entry point. Runs without a GPU.
 */
class TopKAbiTest {
  private static String source() throws IOException {
    return read("native-kernels/kernels/top_k.cu");
  }

  private static String read(String relative) throws IOException {
    return NativeSources.read(relative);
  }


  private static int constant(String source, String name) {
    Matcher m = Pattern.compile("constexpr int " + name + " = (\\d+);").matcher(source);
    assertTrue(m.find(), "constexpr int " + name + " in top_k.cu");
    return Integer.parseInt(m.group(1));
  }

  @Test
  void constantsMatch() throws IOException {
    String source = source();
    assertEquals(CudaTopK.SORT_TILE, constant(source, "kSortTile"));
    assertEquals(CudaTopK.SORT_THREADS, constant(source, "kSortThreads"));
    assertEquals(CudaTopK.SORT_KEY_BYTES, constant(source, "kSortKeyViewBytes"));
    assertEquals(CudaTopK.ORDERED_KEY_BYTES, constant(source, "kOrderedKeyBytes"));
    assertEquals(TopKSpec.MAX_KEYS, constant(source, "kMaxSortKeys"));
    // Positions below 2^30 leave an ordered key's tie word its rank bit and set-aside bit.
    assertTrue(source.contains("constexpr unsigned int kPositionMask = (1u << 30) - 1;"));
    assertEquals(1 << 30, CudaTopK.MAX_CANDIDATES);
  }

  @Test
  void everyLaunchedKernelExists() throws Exception {
    String source = source();
    int checked = 0;
    for (Field f : CudaTopK.class.getDeclaredFields()) {
      if (f.getName().endsWith("_KERNEL") && f.getType() == String.class) {
        f.setAccessible(true);
        String name = (String) f.get(null);
        Pattern entry = Pattern.compile("(?s)extern \"C\" __global__[^;{]{0,200}?\\b" + name
            + "\\(");
        assertTrue(entry.matcher(source).find(), name + " is not a kernel of top_k.cu");
        checked++;
      }
    }
    assertEquals(5, checked, "CudaTopK's kernels");
    assertTrue(read("native-kernels/kernels/all.cu").contains("#include \"top_k.cu\""));
  }
}
