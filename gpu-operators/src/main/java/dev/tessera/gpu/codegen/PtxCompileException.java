package dev.tessera.gpu.codegen;

import dev.tessera.gpu.GpuException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import jcuda.nvptxcompiler.nvPTXCompileResult;

/**
 * The PTX compiler refused a module. The message leads with what to do, names the PTX line the
 * first error points at and quotes it, then gives the compiler's whole error log. {@link #kind()}
 * tells a caller whether handing the PTX to the driver's JIT instead can help.
 */
public final class PtxCompileException extends GpuException {
  private static final long serialVersionUID = 1L;

  /**
   * "ptxas application ptx input, line 13; fatal   : Parsing error near 'st': syntax error", or
   * from the lexer "ptxas , line 284; fatal   : Parsing error near '': unexpected EOF while
   * scanning".
   */
  private static final Pattern LINE_ERROR = Pattern.compile(
      "^ptxas[^;\\n]*, line (\\d+); (?:error|fatal)\\s*: (.*)$", Pattern.MULTILINE);
  /** "Unsupported .version 9.0; current version is '8.0'". */
  private static final Pattern VERSION_TOO_NEW =
      Pattern.compile("Unsupported \\.version (\\d+\\.\\d+); current version is '(\\d+\\.\\d+)'");
  /** "Value 'sm_100' is not defined for option 'gpu-name'". */
  private static final Pattern UNKNOWN_ARCH =
      Pattern.compile("Value '([^']+)' is not defined for option 'gpu-name'");
  private static final String TARGET_NEWER =
      "SM version specified by .target is higher than default SM version assumed";

  /** What kind of refusal it was. */
  public enum Kind {
    /** The PTX is wrong (syntax, types, undefined symbols): fix the generator. */
    INVALID_PTX,
    /** The module's {@code .version} is newer than the in-jar compiler reads: driver JIT can. */
    PTX_VERSION_TOO_NEW,
    /** The in-jar compiler does not know the requested {@code sm_XY}: driver JIT can. */
    UNKNOWN_ARCH,
    /** The module's {@code .target} is newer than the {@code sm_XY} compiled for. */
    TARGET_NEWER_THAN_ARCH,
    /** Anything else (internal error, out of memory, bad option). */
    OTHER
  }

  private final Kind kind;
  private final int result;
  private final String errorLog;
  private final int line;
  private final String sourceLine;

  private PtxCompileException(String message, Kind kind, int result, String errorLog, int line,
      String sourceLine) {
    super(message);
    this.kind = kind;
    this.result = result;
    this.errorLog = errorLog;
    this.line = line;
    this.sourceLine = sourceLine;
  }

  /**
   * A module refused before the compiler saw it, because the compiler would crash the process on
   * it ({@link PtxInputGuard}).
   */
  static PtxCompileException refused(String ptx, String arch, int line, String why) {
    String source = ptx.lines().skip(line - 1).findFirst().orElse("");
    String message = "PTX for " + arch + " is not compiled: " + why + "; the in-jar PTX compiler"
        + " would crash the process on it";
    return new PtxCompileException(message + "\n  line " + line + ": " + source.strip(),
        Kind.INVALID_PTX, nvPTXCompileResult.NVPTXCOMPILE_ERROR_INVALID_INPUT, "", line, source);
  }

  /** Describes a failed compile of {@code ptx} for {@code arch} with the given compiler version. */
  static PtxCompileException of(PtxCompilerRun run, String ptx, String arch,
      String compilerVersion) {
    String log = run.errorLog().strip();
    int line = -1;
    String error = log.lines().findFirst().orElse(nvPTXCompileResult.stringFor(run.result()));
    Matcher lineError = LINE_ERROR.matcher(log);
    if (lineError.find()) {
      line = Integer.parseInt(lineError.group(1));
      error = lineError.group(2).strip();
    }
    String source = line > 0 ? ptx.lines().skip(line - 1).findFirst().orElse(null) : null;
    String compiler = "the in-jar PTX compiler (nvPTXCompiler " + compilerVersion + ")";

    Kind kind;
    String what;
    Matcher m;
    if ((m = VERSION_TOO_NEW.matcher(log)).find()) {
      kind = Kind.PTX_VERSION_TOO_NEW;
      what = "PTX .version " + m.group(1) + " is too new for " + compiler
          + ", which reads PTX up to .version " + m.group(2) + ". Lower the .version line"
          + " (PtxPrelude.retarget) if the module uses nothing newer, or load the PTX through the"
          + " driver JIT (cuModuleLoadDataEx)";
    } else if ((m = UNKNOWN_ARCH.matcher(log)).find()) {
      kind = Kind.UNKNOWN_ARCH;
      what = compiler + " does not know " + m.group(1) + " (CubinTarget.supports says which it"
          + " does); load the PTX through the driver JIT (cuModuleLoadDataEx) instead";
    } else if (log.contains(TARGET_NEWER)) {
      kind = Kind.TARGET_NEWER_THAN_ARCH;
      what = "the module's .target is newer than " + arch + ", the architecture compiled for: write"
          + " a .target no newer than " + arch;
    } else if (run.result() == nvPTXCompileResult.NVPTXCOMPILE_ERROR_COMPILATION_FAILURE
        && line > 0) {
      kind = Kind.INVALID_PTX;
      what = "PTX for " + arch + " does not compile: line " + line + ": " + error;
    } else {
      kind = Kind.OTHER;
      what = "PTX for " + arch + " does not compile (" + nvPTXCompileResult.stringFor(run.result())
          + "): " + error;
    }
    StringBuilder message = new StringBuilder(what);
    if (source != null) {
      message.append("\n  line ").append(line).append(": ").append(source.strip());
    }
    message.append("\ncompiler log:\n").append(log.isEmpty() ? "(empty)" : log);
    return new PtxCompileException(message.toString(), kind, run.result(), log, line, source);
  }

  public Kind kind() {
    return kind;
  }

  /** The compiler's {@code nvPTXCompileResult} code. */
  public int result() {
    return result;
  }

  /** The compiler's error log, whole. */
  public String errorLog() {
    return errorLog;
  }

  /** The 1-based PTX line the first error names, or -1 if it names none. */
  public int line() {
    return line;
  }

  /** The text of {@link #line()} in the PTX compiled, or null. */
  public String sourceLine() {
    return sourceLine;
  }
}
