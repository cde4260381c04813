package dev.tessera.gpu.codegen;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A PTX ISA version as written in a module's {@code .version} directive, e.g. 8.0. Compared as
 * numbers, not text, so that 8.10 would sort after 8.9.
 *
 * @param major the part before the dot
 * @param minor the part after the dot
 */
public record PtxVersion(int major, int minor) implements Comparable<PtxVersion> {
  private static final Pattern TEXT = Pattern.compile("(\\d+)\\.(\\d+)");

  public PtxVersion {
    if (major < 0 || minor < 0) {
      throw new IllegalArgumentException("a PTX version is not negative: " + major + "." + minor);
    }
  }

  /** Parses "8.0". */
  public static PtxVersion parse(String text) {
    Matcher m = TEXT.matcher(text.strip());
    if (!m.matches()) {
      throw new IllegalArgumentException("not a PTX version (major.minor): '" + text + "'");
    }
    return new PtxVersion(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)));
  }

  @Override
  public int compareTo(PtxVersion other) {
    return major != other.major ? Integer.compare(major, other.major)
        : Integer.compare(minor, other.minor);
  }

  /** Whether this version is newer than {@code other}. */
  public boolean isNewerThan(PtxVersion other) {
    return compareTo(other) > 0;
  }

  /** "8.0", as the {@code .version} directive writes it. */
  @Override
  public String toString() {
    return major + "." + minor;
  }
}
