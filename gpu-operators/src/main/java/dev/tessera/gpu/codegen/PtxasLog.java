package dev.tessera.gpu.codegen;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads the reports of entry functions out of a ptxas {@code --verbose} info log. The format is
 * ptxas's, not an API: this accepts both the in-jar compiler's frame lines ({@code "ptxas
 * .     0 bytes stack frame, ..."}) and command-line ptxas's ({@code "    0 bytes stack
 * frame, ..."}), and ignores what it does not know ("bytes gmem", "cmem[0]", "used N barriers",
 * warnings).
 */
final class PtxasLog {
  private static final Pattern ENTRY =
      Pattern.compile("Compiling entry function '([^']+)' for '([^']+)'");
  private static final Pattern PROPERTIES = Pattern.compile("Function properties for (\\S+)");
  private static final Pattern FRAME = Pattern.compile(
      "(\\d+) bytes stack frame, (\\d+) bytes spill stores, (\\d+) bytes spill loads");
  private static final Pattern REGISTERS = Pattern.compile("Used (\\d+) registers");
  private static final Pattern SHARED = Pattern.compile("(\\d+) bytes smem");

  private PtxasLog() {}

  /** The entries' reports in the order ptxas compiled them (not the PTX's order). */
  static List<CompileReport> parse(String infoLog, long compileNanos) {
    List<CompileReport> reports = new ArrayList<>();
    Entry current = null;
    String propertiesOf = null;
    for (String line : infoLog.split("\\R")) {
      Matcher m;
      if ((m = ENTRY.matcher(line)).find()) {
        if (current != null) {
          reports.add(current.report(compileNanos, infoLog));
        }
        current = new Entry(m.group(1));
        propertiesOf = null;
      } else if ((m = PROPERTIES.matcher(line)).find()) {
        propertiesOf = m.group(1);
      } else if ((m = FRAME.matcher(line)).find()) {
        if (propertiesOf != null && current != null) {
          FunctionFrame frame = new FunctionFrame(propertiesOf, Integer.parseInt(m.group(1)),
              Integer.parseInt(m.group(2)), Integer.parseInt(m.group(3)));
          if (propertiesOf.equals(current.name)) {
            current.frame = frame;
          } else {
            // Whole-program compilation lists an entry's out-of-line callees after it.
            current.callees.add(frame);
          }
        }
        propertiesOf = null;
      } else if ((m = REGISTERS.matcher(line)).find() && current != null) {
        current.registers = Integer.parseInt(m.group(1));
        Matcher shared = SHARED.matcher(line);
        current.sharedBytes = shared.find() ? Integer.parseInt(shared.group(1)) : 0;
      }
    }
    if (current != null) {
      reports.add(current.report(compileNanos, infoLog));
    }
    return reports;
  }

  /** An entry being read. */
  private static final class Entry {
    final String name;
    final List<FunctionFrame> callees = new ArrayList<>();
    FunctionFrame frame;
    int registers;
    int sharedBytes;

    Entry(String name) {
      this.name = name;
      this.frame = new FunctionFrame(name, 0, 0, 0);
    }

    CompileReport report(long compileNanos, String infoLog) {
      return new CompileReport(name, registers, frame.stackFrameBytes(), frame.spillStoreBytes(),
          frame.spillLoadBytes(), sharedBytes, callees, compileNanos, infoLog);
    }
  }
}
