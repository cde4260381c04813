package dev.tessera.gpu.codegen;

/**
 * Hand-written CUDA helpers ("the prelude": block scans, tile look-back, UTF-8 compares) that
 * generated kernels call, brought from nvcc's PTX into a module the in-jar compiler reads.
 *
 * <p>The prelude is compiled with {@code nvcc -rdc=true -ptx -arch=sm_90}; each {@code extern "C"
 * __device__} function becomes a {@code .visible .func} the generated PTX calls by name
 * ({@code call.uni (retval0), tessera_block_exclusive_sum_packed, (param0);} inside a {@code { }}
 * scope that declares the {@code .param}s). A module is then: the retargeted prelude, whose header
 * is the module's, followed by the generated entry kernels without a header of their own (a
 * second {@code .version} is a syntax error).
 *
 * <p>The header lines of nvcc 13's output must become:
 *
 * <ul>
 *   <li>{@code .version 9.0} &rarr; {@code .version 8.0}, the newest the in-jar compiler reads
 *       ({@link #retarget}). Lowering the number is enough when the prelude uses no instruction
 *       newer than PTX 8.0; the helpers here use shfl.sync, bar.sync and bfi (PTX 6.0 and older),
 *       and the compiler names any line that needs more.
 *   <li>{@code .target sm_90} stays for an sm_90 cubin; it must be no newer than the architecture
 *       compiled for, so for an older device write that device's sm_XY (the prelude then must
 *       use nothing sm_90-only; the experiment's compiles for sm_80 as it is).
 *   <li>{@code .address_size 64} stays (sm_90 has no 32-bit ABI).
 * </ul>
 *
 * <p>What ptxas makes of the calls (nvPTXCompiler 12.0, -O3, whole-program; the experiment in
 * {@code PreludeCallTest}, its sources under test resources {@code dev/tessera/gpu/codegen/}):
 *
 * <ul>
 *   <li><b>It does not inline them.</b> Each called {@code .func} (visible or not) is compiled
 *       once per calling entry, as an out-of-line subroutine reached by CALL: the cubin has a
 *       symbol {@code $tessera_exp_packed$tessera_block_exclusive_sum_packed} (1008 bytes of the
 *       entry's 1280-byte .text), and the info log lists the callee's own properties after the
 *       entry's: {@code Function properties for tessera_block_exclusive_sum_packed}. ptxas has
 *       no option to force inlining; only the generator writing the body into the kernel would.
 *   <li><b>Scalar arguments and returns cost no stack.</b> int/pointer arguments and an int, a
 *       64-bit or an 8-byte struct return pass in registers: {@code tessera_exp_packed} reports
 *       {@code 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads} with {@code Used
 *       17 registers, 16 bytes smem}, its callee {@code 0 bytes stack frame}.
 *   <li><b>A pointer to a local does.</b> {@code int tessera_block_exclusive_sum(int value, int*
 *       total)} called with {@code &total} of a kernel-local variable ({@code .local}, {@code
 *       cvta.local}) gives the kernel {@code 8 bytes stack frame}: the variable must live in
 *       memory because its address crosses a call ptxas does not inline. Pointers into global or
 *       shared memory are fine ({@code tessera_utf8_compare}: 0 bytes).
 * </ul>
 *
 * <p>So prelude helpers take scalars and return one scalar, packing two 32-bit results into a
 * 64-bit return (or an 8-byte struct), never an out-pointer to the caller's locals; and each call
 * is a real CALL/RET, which matters for per-row helpers in hot loops, not per-tile ones.
 */
public final class PtxPrelude {
  private PtxPrelude() {}

  /** {@link #retarget(String, PtxVersion)} to the version the in-jar compiler reads. */
  public static String retarget(String nvccPtx) {
    return retarget(nvccPtx, PtxCompiler.maxPtxVersion());
  }

  /**
   * nvcc's PTX with its {@code .version} lowered to {@code maxVersion} when it is newer; the rest
   * (and so every line number in a later error) unchanged.
   *
   * @throws IllegalArgumentException if the PTX does not begin with {@code .version} and {@code
   *     .target}, or is not 64-bit ({@code .address_size 64})
   */
  public static String retarget(String nvccPtx, PtxVersion maxVersion) {
    PtxHeader header = PtxHeader.of(nvccPtx).orElseThrow(() -> new IllegalArgumentException(
        "not nvcc PTX: it does not begin with .version and .target"));
    if (header.addressSize() != 64) {
      throw new IllegalArgumentException("the prelude is " + header.addressSize()
          + "-bit PTX (.address_size); kernels are 64-bit: compile it for a 64-bit host");
    }
    return header.version().isNewerThan(maxVersion)
        ? PtxHeader.withVersion(nvccPtx, maxVersion) : nvccPtx;
  }
}
