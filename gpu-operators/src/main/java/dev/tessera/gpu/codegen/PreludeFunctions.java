package dev.tessera.gpu.codegen;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The prelude's PTX split into its functions, so that a kernel's module carries only the ones the
 * kernel calls, directly or through another prelude function.
 *
 * <p>ptxas compiles only the internal functions a module calls, but it still parses all of them:
 * the prelude is about 9,000 lines, of which the two aggregate item functions are 8,000, and
 * reading them is about 40% of compiling a filter kernel (116 ms against 72 ms with the
 * in-jar compiler on a 2-core CI machine). Leaving them out changes no instruction of the
 * kernel: the cubins of the two modules have the same size and differ only in the numbers in the
 * names of the kernel's shared variables (GeneratedModulePreludeTest compares them).
 *
 * <p>It reads nvcc's layout: a function starts on a line {@code [.visible ].func ... name(} at
 * column 0 (a preceding {@code // .globl name} comment line goes with it) and ends at the first
 * line that is exactly {@code }}. Everything else (header, global variables) is kept.
 */
final class PreludeFunctions {
  private static final Pattern FUNCTION_START =
      Pattern.compile("^(?:\\.visible\\s+)?\\.func\\s+(?:\\([^)]*\\)\\s*)?([A-Za-z_][\\w$]*)");
  private static final Pattern GLOBL_COMMENT = Pattern.compile("^\\s*// \\.globl\\s+(\\S+)\\s*$");

  /** How a caller names a function, and the prelude functions it calls. */
  private record Function(Pattern reference, List<String> callees) {}

  /** A run of the prelude's text: one function's, or (function null) text outside them. */
  private record Piece(String text, String function) {}

  /** The whole prelude, in order. */
  private final List<Piece> parts;
  /** The functions by name, in the prelude's order. */
  private final Map<String, Function> functions;

  private PreludeFunctions(List<Piece> parts, Map<String, Function> functions) {
    this.parts = parts;
    this.functions = functions;
  }

  /**
   * Splits {@code prelude}.
   *
   * @throws IllegalStateException if a function has no closing line
   */
  static PreludeFunctions of(String prelude) {
    String[] lines = prelude.split("\n", -1);
    List<Piece> parts = new ArrayList<>();
    StringBuilder outside = new StringBuilder();
    for (int i = 0; i < lines.length; i++) {
      Matcher start = FUNCTION_START.matcher(lines[i]);
      if (!start.find()) {
        outside.append(lines[i]).append('\n');
        continue;
      }
      String name = start.group(1);
      StringBuilder text = new StringBuilder();
      String comment = lastLine(outside);
      Matcher globl = GLOBL_COMMENT.matcher(comment);
      if (globl.matches() && globl.group(1).equals(name)) {
        outside.setLength(outside.length() - comment.length() - 1);
        text.append(comment).append('\n');
      }
      int end = i;
      while (end < lines.length && !lines[end].equals("}")) {
        end++;
      }
      if (end == lines.length) {
        throw new IllegalStateException("the prelude's function " + name + " (line " + (i + 1)
            + ") has no closing '}' line: not the layout nvcc writes");
      }
      for (int k = i; k <= end; k++) {
        text.append(lines[k]).append('\n');
      }
      parts.add(new Piece(outside.toString(), null));
      outside.setLength(0);
      parts.add(new Piece(text.toString(), name));
      i = end;
    }
    parts.add(new Piece(outside.toString(), null));
    List<Piece> bodies = parts.stream().filter(piece -> piece.function() != null).toList();
    Map<String, Pattern> references = new LinkedHashMap<>();
    for (Piece piece : bodies) {
      references.put(piece.function(), referenceTo(piece.function()));
    }
    Map<String, Function> functions = new LinkedHashMap<>();
    for (Piece piece : bodies) {
      List<String> callees = new ArrayList<>();
      references.forEach((callee, reference) -> {
        if (!callee.equals(piece.function()) && reference.matcher(piece.text()).find()) {
          callees.add(callee);
        }
      });
      functions.put(piece.function(), new Function(references.get(piece.function()), callees));
    }
    return new PreludeFunctions(parts, functions);
  }

  /** The prelude's function names, in order. */
  List<String> names() {
    return List.copyOf(functions.keySet());
  }

  /** The names of the functions {@code kernelPtx} needs: those it names and their callees. */
  Set<String> needed(String kernelPtx) {
    Set<String> needed = new HashSet<>();
    Deque<String> work = new ArrayDeque<>();
    functions.forEach((name, function) -> {
      if (function.reference().matcher(kernelPtx).find()) {
        needed.add(name);
        work.add(name);
      }
    });
    while (!work.isEmpty()) {
      for (String callee : functions.get(work.pop()).callees()) {
        if (needed.add(callee)) {
          work.add(callee);
        }
      }
    }
    return needed;
  }

  /** The prelude with only the functions {@code kernelPtx} needs, in their order. */
  String forKernel(String kernelPtx) {
    Set<String> needed = needed(kernelPtx);
    StringBuilder out = new StringBuilder();
    for (Piece piece : parts) {
      if (piece.function() == null || needed.contains(piece.function())) {
        out.append(piece.text());
      }
    }
    out.setLength(out.length() - 1); // the split's last piece had no newline
    return out.toString();
  }

  /** A name as a whole word: never the prefix of a longer name. */
  private static Pattern referenceTo(String name) {
    return Pattern.compile("(?<![\\w$])" + Pattern.quote(name) + "(?![\\w$])");
  }

  private static String lastLine(StringBuilder text) {
    if (text.length() == 0) {
      return "";
    }
    int end = text.length() - 1; // text ends with '\n'
    int start = text.lastIndexOf("\n", end - 1) + 1;
    return text.substring(start, end);
  }
}
