package dev.tessera.gpu.codegen;

/**
 * What ptxas reports of one function's per-thread local memory: its stack frame and the bytes it
 * spills to and reloads from local memory. A stack frame is local memory (DRAM behind the L1), so
 * generated kernels aim for none.
 *
 * @param function the function's PTX name
 * @param stackFrameBytes bytes of stack frame (local arrays, address-taken locals, ABI saves)
 * @param spillStoreBytes bytes of register spill stores
 * @param spillLoadBytes bytes of register spill loads
 */
public record FunctionFrame(String function, int stackFrameBytes, int spillStoreBytes,
    int spillLoadBytes) {

  /** No stack frame and no spills. */
  public boolean clean() {
    return stackFrameBytes == 0 && spillStoreBytes == 0 && spillLoadBytes == 0;
  }
}
