package dev.tessera.gpu.codegen;

/**
 * Refuses the PTX that would crash nvPTXCompiler 12.0 (JCuda 12.6.0's) and with it the whole JVM,
 * before the compiler sees it. Found by feeding it mutated modules: a SIGSEGV inside {@code
 * nvPTXCompilerCompile} (a null pointer in libc's strlen, or in fread) for
 *
 * <ul>
 *   <li>a module that does not begin with {@code .version X.Y} and then {@code .target sm_XY}
 *       (comments may precede them): no header, a stray line or a second {@code .version}
 *       between them, {@code .target foo} (see {@link PtxHeader});
 *   <li>a NUL character anywhere in the module.
 * </ul>
 *
 * <p>Errors after a valid header, lexical (an unterminated comment or string) or not, it reports
 * normally, also when compiles run concurrently (about 2,700 mutated modules tried). One more
 * crash is known and not guarded, since finding it takes a PTX parser: a variable of another
 * state space named like a register of a parameterized {@code .reg} declaration ({@code .reg .b32
 * %r<4>;} then {@code .local .b32 %r2;}; a plain duplicate is reported as "Duplicate definition").
 * Generators must not produce it; their tests compile in surefire's forked JVM, where a crash
 * fails the build instead of an executor. Valid modules crash it too: some kernels that decode
 * GPU-DFOR tiles, unless compiled with {@link GeneratedModule#DFOR_OPTION}.
 */
final class PtxInputGuard {
  private PtxInputGuard() {}

  /** Throws {@link PtxCompileException} (INVALID_PTX) if {@code ptx} would crash the compiler. */
  static void check(String ptx, String arch) {
    if (PtxHeader.of(ptx).isEmpty()) {
      throw PtxCompileException.refused(ptx, arch, 1, "it does not begin with '.version X.Y' and"
          + " '.target sm_XY' (comments may precede them), as PTX requires");
    }
    int nul = ptx.indexOf('\0');
    if (nul >= 0) {
      int line = (int) ptx.substring(0, nul).chars().filter(c -> c == '\n').count() + 1;
      throw PtxCompileException.refused(ptx, arch, line, "it has a NUL character at line " + line);
    }
  }
}
