package dev.tessera.gpu.codegen;

import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The directives a PTX module must begin with: {@code .version}, then {@code .target}, and
 * (for 64-bit code, which sm_90 requires) {@code .address_size 64}. Comments and blank lines may
 * precede them.
 *
 * <p>{@link PtxInputGuard} requires it of every module before the compiler sees one, because
 * nvPTXCompiler 12.0 crashes the whole process when the module has a syntax error before a valid
 * {@code .target sm_XY}.
 *
 * @param version the module's PTX ISA version
 * @param target the module's {@code .target} architecture, "sm_90"
 * @param addressSize the {@code .address_size}, 32 when the module does not say (PTX's default)
 */
public record PtxHeader(PtxVersion version, String target, int addressSize) {
  /** Whitespace and comments, which may precede and separate the directives. */
  private static final String GAP = "(?:\\s|//[^\\n]*|/\\*.*?\\*/)";
  private static final Pattern START = Pattern.compile("\\A" + GAP + "*\\.version\\s+(\\d+\\.\\d+)"
      + GAP + "+\\.target\\s+(sm_\\d+a?)(?=[\\s,/]|\\z)", Pattern.DOTALL);
  private static final Pattern ADDRESS_SIZE =
      Pattern.compile("^\\s*\\.address_size\\s+(\\d+)", Pattern.MULTILINE);

  /** The header of {@code ptx}, or empty if the module does not begin with one. */
  public static Optional<PtxHeader> of(String ptx) {
    Matcher start = START.matcher(ptx);
    if (!start.find()) {
      return Optional.empty();
    }
    Matcher addressSize = ADDRESS_SIZE.matcher(ptx);
    int bits = addressSize.find() ? Integer.parseInt(addressSize.group(1)) : 32;
    return Optional.of(new PtxHeader(PtxVersion.parse(start.group(1)), start.group(2), bits));
  }

  /**
   * {@code ptx} with its {@code .version} number replaced by {@code version} (nothing else
   * changes: not a comment, not a line number).
   *
   * @throws IllegalArgumentException if {@code ptx} does not begin with a header
   */
  static String withVersion(String ptx, PtxVersion version) {
    Matcher start = START.matcher(ptx);
    if (!start.find()) {
      throw new IllegalArgumentException("the PTX does not begin with .version and .target");
    }
    return ptx.substring(0, start.start(1)) + version + ptx.substring(start.end(1));
  }

  /** The three directives as a module's first lines. */
  public String text() {
    return ".version " + version + "\n.target " + target + "\n.address_size " + addressSize + "\n";
  }
}
