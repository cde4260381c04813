package dev.tessera.gpu.codegen;

import static jcuda.nvptxcompiler.JNvPTXCompiler.nvPTXCompilerCompile;
import static jcuda.nvptxcompiler.JNvPTXCompiler.nvPTXCompilerCreate;
import static jcuda.nvptxcompiler.JNvPTXCompiler.nvPTXCompilerDestroy;
import static jcuda.nvptxcompiler.JNvPTXCompiler.nvPTXCompilerGetCompiledProgram;
import static jcuda.nvptxcompiler.JNvPTXCompiler.nvPTXCompilerGetCompiledProgramSize;
import static jcuda.nvptxcompiler.JNvPTXCompiler.nvPTXCompilerGetErrorLog;
import static jcuda.nvptxcompiler.JNvPTXCompiler.nvPTXCompilerGetErrorLogSize;
import static jcuda.nvptxcompiler.JNvPTXCompiler.nvPTXCompilerGetInfoLog;
import static jcuda.nvptxcompiler.JNvPTXCompiler.nvPTXCompilerGetInfoLogSize;

import dev.tessera.gpu.GpuException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import jcuda.nvptxcompiler.nvPTXCompilerHandle;
import jcuda.nvptxcompiler.nvPTXCompileResult;

/**
 * One call of NVIDIA's PTX compiler on a handle of its own, and what came of it: the result code,
 * the cubin (on success), both logs and the time the compile call took. The handle is always
 * destroyed. Callers check {@link PtxCompilerLibrary#isAvailable()} first.
 *
 * @param result an {@code nvPTXCompileResult} code
 * @param cubin the compiled program, empty unless {@code result} is success
 * @param infoLog what {@code --verbose} reports (registers, stack frames, ...), may be empty
 * @param errorLog the errors, empty on success (warnings go to the info log)
 * @param compileNanos the duration of {@code nvPTXCompilerCompile} alone
 */
record PtxCompilerRun(int result, byte[] cubin, String infoLog, String errorLog,
    long compileNanos) {

  boolean succeeded() {
    return result == nvPTXCompileResult.NVPTXCOMPILE_SUCCESS;
  }

  /** Compiles {@code ptx} with {@code options}, each a whole option ("--gpu-name=sm_90"). */
  static PtxCompilerRun run(String ptx, List<String> options) {
    byte[] source = ptx.getBytes(StandardCharsets.UTF_8);
    nvPTXCompilerHandle handle = new nvPTXCompilerHandle();
    int created = nvPTXCompilerCreate(handle, source.length, source);
    if (created != nvPTXCompileResult.NVPTXCOMPILE_SUCCESS) {
      throw new GpuException("nvPTXCompilerCreate failed: "
          + nvPTXCompileResult.stringFor(created));
    }
    try {
      String[] args = options.toArray(new String[0]);
      long start = System.nanoTime();
      int result = nvPTXCompilerCompile(handle, args.length, args);
      long nanos = System.nanoTime() - start;
      byte[] cubin =
          result == nvPTXCompileResult.NVPTXCOMPILE_SUCCESS ? program(handle) : new byte[0];
      return new PtxCompilerRun(result, cubin, infoLog(handle), errorLog(handle), nanos);
    } finally {
      nvPTXCompilerDestroy(handle);
    }
  }

  private static byte[] program(nvPTXCompilerHandle handle) {
    long[] size = new long[1];
    check(nvPTXCompilerGetCompiledProgramSize(handle, size), "nvPTXCompilerGetCompiledProgramSize");
    byte[] cubin = new byte[Math.toIntExact(size[0])];
    check(nvPTXCompilerGetCompiledProgram(handle, cubin), "nvPTXCompilerGetCompiledProgram");
    return cubin;
  }

  private static String infoLog(nvPTXCompilerHandle handle) {
    long[] size = new long[1];
    check(nvPTXCompilerGetInfoLogSize(handle, size), "nvPTXCompilerGetInfoLogSize");
    byte[] log = new byte[Math.toIntExact(size[0])];
    if (log.length > 0) {
      check(nvPTXCompilerGetInfoLog(handle, log), "nvPTXCompilerGetInfoLog");
    }
    return text(log);
  }

  private static String errorLog(nvPTXCompilerHandle handle) {
    long[] size = new long[1];
    check(nvPTXCompilerGetErrorLogSize(handle, size), "nvPTXCompilerGetErrorLogSize");
    byte[] log = new byte[Math.toIntExact(size[0])];
    if (log.length > 0) {
      check(nvPTXCompilerGetErrorLog(handle, log), "nvPTXCompilerGetErrorLog");
    }
    return text(log);
  }

  /** The logs' sizes count a terminating NUL; it is not text. */
  private static String text(byte[] log) {
    int end = log.length;
    while (end > 0 && log[end - 1] == 0) {
      end--;
    }
    return new String(log, 0, end, StandardCharsets.UTF_8);
  }

  private static void check(int result, String what) {
    if (result != nvPTXCompileResult.NVPTXCOMPILE_SUCCESS) {
      throw new GpuException(what + " failed: " + nvPTXCompileResult.stringFor(result));
    }
  }
}
