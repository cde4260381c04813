package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.codegen.AggregateUpdateGenerator;
import dev.tessera.gpu.codegen.LocalTableLayout;
import dev.tessera.gpu.column.ColumnType;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The plan layout CudaHashAggregate writes and the hash aggregation's CUDA code reads
 * (include/tessera/hash_aggregate.cuh): every word index the Java side names (H_*, K_*, F_*) is
 * the index of the member of the same (snake_case) name in the CUDA struct, and the struct sizes
 * agree; the per-block tables' words are given to the same functions on both sides. Runs without
 * a GPU.
 */
class HashAggregateAbiTest {
  private static final Pattern MEMBER = Pattern.compile(
      "^\\s*(?:unsigned\\s+)?long\\s+long\\s+(\\w+)(?:\\[(\\d+)\\])?;", Pattern.MULTILINE);

  private static String source() throws IOException {
    return source("hash_aggregate.cuh");
  }

  private static String source(String header) throws IOException {
    for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
      Path candidate = dir.resolve("native-kernels/include/tessera/" + header);
      if (Files.isRegularFile(candidate)) {
        return Files.readString(candidate);
      }
    }
    throw new IllegalStateException("native-kernels/include/tessera/" + header + " not found");
  }

  /** A constexpr integer of the CUDA source, decimal or hexadecimal, with or without suffix. */
  private static long constexpr(String source, String name) {
    Matcher m = Pattern.compile("constexpr [\\w ]+ " + name
        + " = (-?)(0x[0-9a-fA-F]+|\\d+)(?:u|ull)?;").matcher(source);
    assertTrue(m.find(), name);
    long value = Long.parseUnsignedLong(m.group(2).replaceFirst("^0x", ""),
        m.group(2).startsWith("0x") ? 16 : 10);
    return m.group(1).isEmpty() ? value : -value;
  }

  private static long staticField(String className, String name)
      throws ReflectiveOperationException {
    Field f = Class.forName(className).getDeclaredField(name);
    f.setAccessible(true);
    return f.getLong(null);
  }

  /**
   * The constants the generated kernels' group update (codegen's GroupLookup and
   * GroupAccumulation, which write hash_aggregate.cuh's functions in PTX; StringWords, which
   * hashes strings for them and for the join probes) shares with the CUDA code: the slot states
   * and layout, the hash's seeds and salts, the key heap's alignment, the per-block table's
   * probes.
   */
  @Test
  void generatedGroupUpdateUsesTheCudaConstants() throws Exception {
    String aggregate = source();
    String hash = source("hash.cuh");
    String lookup = "dev.tessera.gpu.codegen.GroupLookup";
    String accumulation = "dev.tessera.gpu.codegen.GroupAccumulation";
    assertEquals(constexpr(aggregate, "kEmpty"), staticField(lookup, "EMPTY"));
    assertEquals(constexpr(aggregate, "kBusy"), staticField(lookup, "BUSY"));
    assertEquals(constexpr(aggregate, "kSlotHash"), AggregateUpdateGenerator.GROUP_SLOT_HASH);
    assertEquals(constexpr(aggregate, "kSlotGroup"), staticField(lookup, "SLOT_GROUP"));
    assertEquals(constexpr(aggregate, "kUnknownHash"), staticField(lookup, "UNKNOWN_HASH"));
    assertEquals(constexpr(aggregate, "kSlotBytes"), AggregateUpdateGenerator.GROUP_SLOT_BYTES);
    assertEquals(constexpr(aggregate, "kNullKeyHash"), staticField(lookup, "NULL_KEY_HASH"));
    assertEquals(constexpr(aggregate, "kNullKeySalt"), staticField(lookup, "NULL_KEY_SALT"));
    assertEquals(constexpr(hash, "kStringHashSeed"),
        staticField("dev.tessera.gpu.codegen.StringWords", "STRING_HASH_SEED"));
    assertEquals(constexpr(aggregate, "kKeyHeapAlignment"),
        AggregateUpdateGenerator.KEY_HEAP_ALIGNMENT);
    assertEquals(constexpr(hash, "kKeyTupleSeed"),
        staticField("dev.tessera.gpu.codegen.ProgramEmitter", "KEY_TUPLE_SEED"));
    assertEquals(constexpr(hash, "kProbeFilterMultiplier"),
        staticField("dev.tessera.gpu.codegen.ProgramEmitter", "PROBE_FILTER_MULTIPLIER"));
    assertEquals(constexpr(aggregate, "kEmpty"), staticField(accumulation, "EMPTY"));
    assertEquals(constexpr(aggregate, "kLocalProbes"), staticField(accumulation, "LOCAL_PROBES"));
    assertEquals(constexpr(aggregate, "kLocalHashMultiplier"),
        staticField(accumulation, "LOCAL_HASH"));
  }

  /** Member name to word index of a CUDA struct of 64-bit members; "#words" is its size. */
  private static Map<String, Integer> struct(String source, String name) {
    int start = source.indexOf("struct " + name + " {");
    assertTrue(start >= 0, "struct " + name);
    String body = source.substring(start, source.indexOf("};", start));
    Map<String, Integer> members = new LinkedHashMap<>();
    int word = 0;
    Matcher m = MEMBER.matcher(body);
    while (m.find()) {
      members.put(m.group(1), word);
      word += m.group(2) == null ? 1 : Integer.parseInt(m.group(2));
    }
    members.put("#words", word);
    return members;
  }

  private static int constant(String source, String name) {
    Matcher m = Pattern.compile("constexpr int " + name + " = (\\d+);").matcher(source);
    assertTrue(m.find(), name);
    return Integer.parseInt(m.group(1));
  }

  private static int javaConstant(String name) throws ReflectiveOperationException {
    Field f = CudaHashAggregate.class.getDeclaredField(name);
    f.setAccessible(true);
    return f.getInt(null);
  }

  /** Every Java constant PREFIX + NAME equals the index of the CUDA member name (snake_case). */
  private static void assertMatches(Map<String, Integer> cuda, String prefix,
      Map<String, String> renamed) throws ReflectiveOperationException {
    assertMatches(CudaHashAggregate.class, cuda, prefix, renamed);
  }

  private static void assertMatches(Class<?> java, Map<String, Integer> cuda, String prefix,
      Map<String, String> renamed) throws ReflectiveOperationException {
    int checked = 0;
    for (Field f : java.getDeclaredFields()) {
      if (!f.getName().startsWith(prefix) || f.getType() != int.class) {
        continue;
      }
      String member = f.getName().substring(prefix.length()).toLowerCase();
      member = renamed.getOrDefault(member, member);
      assertTrue(cuda.containsKey(member), f.getName() + " names no CUDA member " + member);
      f.setAccessible(true);
      assertEquals(cuda.get(member), f.getInt(null), java.getSimpleName() + "." + f.getName());
      checked++;
    }
    assertTrue(checked > 0, "found the " + prefix + " constants");
  }

  @Test
  void planLayoutMatchesHashAggregateCu() throws Exception {
    String cu = source();
    int headerWords = constant(cu, "kHeaderWords");
    int columnWords = constant(cu, "kColumnWords");
    assertEquals(headerWords, javaConstant("HEADER_WORDS"));
    assertEquals(columnWords, javaConstant("COLUMN_WORDS"));
    Map<String, Integer> header = struct(cu, "Header");
    Map<String, Integer> key = struct(cu, "Key");
    Map<String, Integer> function = struct(cu, "Function");
    assertEquals(headerWords, header.get("#words"));
    assertEquals(columnWords, key.get("#words"));
    assertEquals(columnWords, function.get("#words"));
    assertMatches(header, "H_", Map.of());
    assertMatches(key, "K_", Map.of("register", "reg"));
    assertMatches(function, "F_", Map.of("register", "reg"));
    // The kernel generator's reading of the same plan.
    Class<?> generated = Class.forName("dev.tessera.gpu.codegen.AggregatePlan");
    for (String words : new String[] {"HEADER_WORDS", "COLUMN_WORDS"}) {
      Field f = generated.getDeclaredField(words);
      f.setAccessible(true);
      assertEquals(words.equals("HEADER_WORDS") ? headerWords : columnWords, f.getInt(null),
          "AggregatePlan." + words);
    }
    assertMatches(generated, header, "H_", Map.of());
    assertMatches(generated, key, "K_", Map.of());
    assertMatches(generated, function, "F_", Map.of());
  }

  /**
   * The per-block tables' words (hash_aggregate.cuh {@code LocalTable::HasHigh} and {@code
   * HasSeen}, and {@code CompactWords}', those of {@code CompactLocalTable}) are given to the kinds
   * of function {@link LocalTableLayout} gives them to, the kernels' reset and merge finding each
   * function's rows where the generated updates write them. Each predicate's expression ({@code
   * true}, {@code kind == kX || ...} or {@code kind != kX && ...}) is read from the source and
   * evaluated for every kind. The lean table's ({@code LeanWords}) are the plan's {@code
   * table_words}, whose bits are {@link LocalTableLayout#tableWords}'.
   */
  @Test
  void tableWordsAreTheLayoutsOfEveryKind() throws Exception {
    String cu = source();
    for (boolean compact : new boolean[] {false, true}) {
      String struct = cu.substring(cu.indexOf(
          compact ? "struct CompactWords {" : "struct LocalTable {"));
      for (Kind kind : Kind.values()) {
        LocalTableLayout layout = new LocalTableLayout(
            List.of(new AggregateFunction(kind, 0, ColumnType.LONG)), compact);
        String what = (compact ? "compact " : "") + kind;
        assertEquals(layout.hasHigh(0), predicate(cu, struct, "HasHigh", kind), "HasHigh " + what);
        assertEquals(layout.hasSeen(0), predicate(cu, struct, "HasSeen", kind), "HasSeen " + what);
      }
    }
    assertEquals(LocalTableLayout.TABLE_HIGH, constant(cu, "kTableHigh"));
    assertEquals(LocalTableLayout.TABLE_SEEN, constant(cu, "kTableSeen"));
    String lean = cu.substring(cu.indexOf("struct LeanWords {"));
    assertTrue(lean.matches("(?s)[^}]*HasHigh\\(int, long long table_words\\) \\{\\s*"
        + "return \\(table_words & kTableHigh\\) != 0;.*"), "LeanWords::HasHigh");
    assertTrue(lean.matches("(?s)[^}]*\\}[^}]*HasSeen\\(int, long long table_words\\) \\{\\s*"
        + "return \\(table_words & kTableSeen\\) != 0;.*"), "LeanWords::HasSeen");
  }

  /**
   * The value for {@code kind} of the static predicate {@code name}(int kind, long long) that
   * opens {@code struct}: true, or its return expression's comparisons of {@code kind} with
   * constants of {@code cu}'s AggregateKind ({@code constexpr int kX =
   * static_cast<int>(AggregateKind::X);}), all joined by {@code ||} or all by {@code &&}.
   */
  private static boolean predicate(String cu, String struct, String name, Kind kind) {
    Matcher body = Pattern.compile(
        "static bool " + name + "\\(int(?: kind)?, long long\\) \\{\\s*return ([^;]+);")
        .matcher(struct);
    assertTrue(body.find(), name);
    String expression = body.group(1).trim();
    if (expression.equals("true")) {
      return true;
    }
    boolean any = expression.contains("||");
    assertTrue(!any || !expression.contains("&&"), name + ": " + expression);
    boolean value = !any; // what || and && start from
    for (String term : expression.split(any ? "\\|\\|" : "&&")) {
      Matcher compare = Pattern.compile("kind (==|!=) (k\\w+)").matcher(term.trim());
      assertTrue(compare.matches(), name + ": " + term);
      Matcher constant = Pattern.compile("constexpr int " + compare.group(2)
          + " = static_cast<int>\\(AggregateKind::(\\w+)\\);").matcher(cu);
      assertTrue(constant.find(), compare.group(2));
      boolean equal = Kind.valueOf(constant.group(1)) == kind;
      boolean holds = compare.group(1).equals("==") == equal;
      value = any ? value || holds : value && holds;
    }
    return value;
  }
}
