package dev.tessera.gpu.cuda;

import static dev.tessera.gpu.cuda.CudaException.check;
import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static jcuda.driver.JCudaDriver.cuFuncGetAttribute;
import static jcuda.driver.JCudaDriver.cuFuncSetAttribute;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadData;
import static jcuda.driver.JCudaDriver.cuModuleUnload;
import static jcuda.driver.JCudaDriver.cuOccupancyMaxActiveBlocksPerMultiprocessor;

import dev.tessera.gpu.GpuException;
import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.ConcurrentHashMap;
import jcuda.driver.CUfunction;
import jcuda.driver.CUfunction_attribute;
import jcuda.driver.CUmodule;
import jcuda.driver.CUresult;

/**
 * The kernels' fatbin (built by native-kernels, shipped as a jar resource) loaded into one device
 * context, and the launch helper: every launch is checked, and a failure names the kernel and the
 * CUDA error.
 */
public final class KernelModule {
  /** Where native-kernels puts the fatbin inside its jar. */
  public static final String FATBIN_RESOURCE = "/dev/tessera/kernels/tessera.fatbin";
  /** Shared memory (static and dynamic) a block may have without its kernel asking for more. */
  private static final int DEFAULT_DYNAMIC_SHARED_BYTES = 48 << 10;

  private final CudaDevice device;
  private final CUmodule module;
  private final ConcurrentHashMap<String, CUfunction> functions = new ConcurrentHashMap<>();
  /** The shared-memory carveout (percent) each function was told to prefer. */
  private final ConcurrentHashMap<CUfunction, Integer> carveouts = new ConcurrentHashMap<>();
  /** The dynamic shared memory each function was allowed beyond the default 48 KiB. */
  private final ConcurrentHashMap<CUfunction, Integer> sharedAllowed = new ConcurrentHashMap<>();
  /** The static shared memory of each function (staticSharedBytes). */
  private final ConcurrentHashMap<CUfunction, Integer> staticShared = new ConcurrentHashMap<>();
  /** The most threads a block of each function may have (maxBlockThreads). */
  private final ConcurrentHashMap<CUfunction, Integer> blockThreads = new ConcurrentHashMap<>();

  private KernelModule(CudaDevice device, CUmodule module) {
    this.device = device;
    this.module = module;
  }

  static KernelModule load(CudaDevice device) {
    byte[] image = readFatbin();
    CUmodule module = new CUmodule();
    int result = cuModuleLoadData(module, image);
    if (result == CUresult.CUDA_ERROR_NO_BINARY_FOR_GPU
        || result == CUresult.CUDA_ERROR_UNSUPPORTED_PTX_VERSION) {
      throw new GpuException(String.format("The Tessera kernels have no code this GPU (%s, sm_%d%d)"
          + " or its driver (CUDA %s) can run: %s. Build with -Prelease for every GPU generation,"
          + " or update the NVIDIA driver.", device.name(), device.computeMajor(),
          device.computeMinor(), device.driverVersion(), CudaException.describe(result)));
    }
    check(result, "loading the Tessera kernels (" + FATBIN_RESOURCE + ")");
    return new KernelModule(device, module);
  }

  /**
   * Launches {@code kernel} on {@code stream} with a 1-D grid.
   *
   * @throws GpuException naming the kernel if the function is unknown or the launch fails
   */
  public void launch(String kernel, LaunchShape shape, CudaStream stream, KernelArgs args) {
    launch(functions.computeIfAbsent(kernel, this::lookUp), kernel, shape, stream, args);
  }

  /**
   * Launches {@code function} (of this module or another of the device's, such as a generated
   * kernel's) named {@code kernel} in errors, on {@code stream} with a 1-D grid.
   */
  void launch(CUfunction function, String kernel, LaunchShape shape, CudaStream stream,
      KernelArgs args) {
    device.makeCurrent();
    int result = cuLaunchKernel(function,
        shape.gridBlocks(), 1, 1,
        shape.blockThreads(), 1, 1,
        shape.sharedMemoryBytes(), stream.handle(),
        null, LaunchParameters.extra(args));
    if (result != CUresult.CUDA_SUCCESS) {
      // Parameters past the kernel's own fail the launch as "out of resources".
      check(result, "launching kernel " + kernel + " (grid " + shape.gridBlocks() + ", block "
          + shape.blockThreads() + ", " + args.size() + " bytes of parameters)");
    }
    stream.noteLaunch(kernel);
  }

  /** {@link #residentBlocks(CUfunction, String, LaunchShape)} of this module's {@code kernel}. */
  int residentBlocks(String kernel, LaunchShape shape) {
    return residentBlocks(functions.computeIfAbsent(kernel, this::lookUp), kernel, shape);
  }

  /**
   * How many blocks of {@code function} (named {@code kernel} in errors) of {@code shape}'s
   * threads and dynamic shared memory one multiprocessor holds at once, at least 1: the grid of
   * a kernel whose blocks take tiles grid-stride, for which a block that is not resident with
   * the others would run after them.
   */
  int residentBlocks(CUfunction function, String kernel, LaunchShape shape) {
    device.makeCurrent();
    int[] blocks = new int[1];
    check(cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, function, shape.blockThreads(),
        shape.sharedMemoryBytes()), "the occupancy of kernel " + kernel);
    return Math.max(1, blocks[0]);
  }

  /**
   * {@link #residentBlocks(CUfunction, String, LaunchShape)} where the blocks' shared memory may
   * take at most {@code percent} of the multiprocessor's: the function prefers that carveout, and
   * the blocks are as many as it holds. The driver otherwise takes whatever carveout the most
   * resident blocks need, and the L1 cache gets the rest: a grouped aggregate whose 9 blocks of
   * 24 KiB took it all (28 KiB of L1 left) ran 40% slower at 10^6 groups, its global table's
   * loads in flight held back (H100). A block of more than 48 KiB is allowed them here.
   */
  int residentBlocks(CUfunction function, String kernel, LaunchShape shape, int percent) {
    device.makeCurrent();
    int shared = shape.sharedMemoryBytes();
    // The default 48 KiB hold a block's static and dynamic shared memory together: a table of
    // exactly 48 KiB beside a kernel's 16 static bytes failed its launch (invalid argument).
    if (shared + staticSharedBytes(function, kernel) > DEFAULT_DYNAMIC_SHARED_BYTES
        && sharedAllowed.getOrDefault(function, 0) < shared) {
      check(cuFuncSetAttribute(function,
          CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared),
          "allowing kernel " + kernel + " " + shared + " bytes of dynamic shared memory");
      sharedAllowed.put(function, shared);
    }
    Integer before = carveouts.put(function, percent); // once per kernel, not at every launch
    if (before == null || before != percent) {
      check(cuFuncSetAttribute(function,
          CUfunction_attribute.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, percent),
          "the shared memory carveout of kernel " + kernel);
    }
    long carveout = (long) device.sharedBytesPerMultiprocessor() * percent / 100;
    long fit = carveout / (shape.sharedMemoryBytes() + device.reservedSharedBytesPerBlock());
    return (int) Math.max(1, Math.min(residentBlocks(function, kernel, shape), fit));
  }

  /** The static shared memory of {@code function} (named {@code kernel} in errors), in bytes. */
  private int staticSharedBytes(CUfunction function, String kernel) {
    return staticShared.computeIfAbsent(function, f -> {
      int[] bytes = new int[1];
      check(cuFuncGetAttribute(bytes, CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f),
          "the static shared memory of kernel " + kernel);
      return bytes[0];
    });
  }

  /**
   * The most threads a block of {@code function} (named {@code kernel} in errors) may have: what
   * its registers allow on this device, at most 1,024 (a multiple of the warp's 32).
   */
  int maxBlockThreads(CUfunction function, String kernel) {
    return blockThreads.computeIfAbsent(function, f -> {
      device.makeCurrent();
      int[] threads = new int[1];
      check(cuFuncGetAttribute(threads,
          CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f),
          "the most threads a block of kernel " + kernel + " may have");
      return threads[0];
    });
  }

  void unload() {
    cuModuleUnload(module);
  }

  private CUfunction lookUp(String kernel) {
    CUfunction function = new CUfunction();
    int result = cuModuleGetFunction(function, module, kernel);
    if (result == CUresult.CUDA_ERROR_NOT_FOUND) {
      throw new GpuException("kernel " + kernel + " is not in the Tessera fatbin ("
          + FATBIN_RESOURCE + "); the jar and the kernels were built from different sources");
    }
    check(result, "looking up kernel " + kernel);
    return function;
  }

  private static byte[] readFatbin() {
    try (InputStream in = KernelModule.class.getResourceAsStream(FATBIN_RESOURCE)) {
      if (in == null) {
        throw new GpuException("The Tessera kernels (" + FATBIN_RESOURCE + ") are not on the"
            + " classpath: the tessera-native-kernels jar is missing (use the shaded plugin jar)");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new GpuException("Cannot read " + FATBIN_RESOURCE + ": " + e.getMessage(), e);
    }
  }
}
