package dev.tessera.gpu.codegen;

import java.util.List;

/**
 * What ptxas reported of one entry function ({@code .entry}) it compiled, parsed from the
 * compiler's {@code --verbose} info log, e.g. for the PTX compiler of CUDA 12.0:
 *
 * <pre>
 * ptxas info    : Compiling entry function 'tessera_add' for 'sm_90'
 * ptxas info    : Function properties for tessera_add
 * ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 * ptxas info    : Used 14 registers, 16 bytes smem
 * ptxas info    : Function properties for tessera_block_exclusive_sum
 * ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 * </pre>
 *
 * <p>The properties printed after the entry's "Used" line, up to the next entry, are those of the
 * {@code .func}s the entry calls out of line (through the ABI: ptxas does not inline PTX calls;
 * see {@link PtxPrelude}): {@link #callees()}.
 *
 * @param function the entry's PTX name
 * @param registers registers per thread
 * @param stackFrameBytes the entry's own stack frame in bytes
 * @param spillStoreBytes the entry's register spill stores in bytes
 * @param spillLoadBytes the entry's register spill loads in bytes
 * @param sharedMemoryBytes static shared memory ("smem"), 0 when not reported
 * @param callees the frames of the functions the entry calls out of line, in the log's order
 * @param compileNanos how long the whole compile (every function of the module) took
 * @param infoLog the whole compile's info log, as the compiler wrote it
 */
public record CompileReport(String function, int registers, int stackFrameBytes,
    int spillStoreBytes, int spillLoadBytes, int sharedMemoryBytes, List<FunctionFrame> callees,
    long compileNanos, String infoLog) {

  public CompileReport {
    callees = List.copyOf(callees);
  }

  /**
   * No stack frame and no spills in the entry or any function it calls: everything the kernel
   * keeps per thread stays in registers.
   */
  public boolean clean() {
    return stackFrameBytes == 0 && spillStoreBytes == 0 && spillLoadBytes == 0
        && callees.stream().allMatch(FunctionFrame::clean);
  }

  /** The entry's own stack frame and spills. */
  public FunctionFrame frame() {
    return new FunctionFrame(function, stackFrameBytes, spillStoreBytes, spillLoadBytes);
  }

  /** One line for logs: "tessera_add: 14 registers, 0 B stack, 0/0 B spilled, 0 B smem". */
  public String summary() {
    StringBuilder text = new StringBuilder(function).append(": ").append(registers)
        .append(" registers, ").append(stackFrameBytes).append(" B stack, ")
        .append(spillStoreBytes).append('/').append(spillLoadBytes).append(" B spilled, ")
        .append(sharedMemoryBytes).append(" B smem");
    for (FunctionFrame callee : callees) {
      text.append("; calls ").append(callee.function()).append(" (")
          .append(callee.stackFrameBytes()).append(" B stack, ").append(callee.spillStoreBytes())
          .append('/').append(callee.spillLoadBytes()).append(" B spilled)");
    }
    return text.toString();
  }
}
