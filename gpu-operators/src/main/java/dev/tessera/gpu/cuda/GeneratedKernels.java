package dev.tessera.gpu.cuda;

import static dev.tessera.gpu.cuda.CudaException.check;
import static jcuda.driver.JCudaDriver.cuFuncGetAttribute;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadData;
import static jcuda.driver.JCudaDriver.cuModuleUnload;

import dev.tessera.gpu.GpuException;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codegen.AggregateUpdateGenerator;
import dev.tessera.gpu.codegen.CodegenUnsupportedException;
import dev.tessera.gpu.codegen.CompileReport;
import dev.tessera.gpu.codegen.CompiledKernel;
import dev.tessera.gpu.codegen.CubinTarget;
import dev.tessera.gpu.codegen.FilterProjectGenerator;
import dev.tessera.gpu.codegen.GeneratedKernel;
import dev.tessera.gpu.codegen.GeneratedModule;
import dev.tessera.gpu.codegen.InputSpec;
import dev.tessera.gpu.codegen.KernelFeatures;
import dev.tessera.gpu.codegen.PtxCompiler;
import dev.tessera.gpu.expr.Program;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import jcuda.driver.CUfunction;
import jcuda.driver.CUfunction_attribute;
import jcuda.driver.CUmodule;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One device context's generated kernels, compiled once per key ({@link FilterProjectGenerator#key},
 * {@link AggregateUpdateGenerator#key}: programs that differ only in their constants share one) and kept until the device is released.
 * A pipeline the generator does not cover, or whose kernel the compiler rejects or cannot compile,
 * is remembered as such with the reason, and runs on the interpreter.
 *
 * <p>The in-jar PTX compiler makes the cubin where it knows the device's architecture
 * ({@link CubinTarget}); for newer devices the driver compiles the PTX itself (its JIT). When
 * the in-jar compiler (CUDA 12.0's) leaves a kernel a few bytes of stack or spills, the driver's
 * compiler, newer on a current driver, gets a second try (where the in-jar compiler fitted the
 * kernel's first form in the registers): its kernel is used when it needs no local memory and
 * at most {@link GeneratedModule#MAX_REGISTERS} registers (a spill would be in local memory). A
 * kernel that decodes GPU-DFOR tiles is never given to the driver's compiler, which takes no
 * ptxas options ({@link GeneratedModule#decodesDforTiles}).
 */
final class GeneratedKernels {
  private static final Logger LOG = LoggerFactory.getLogger(GeneratedKernels.class);

  private final CudaDevice device;
  private final ConcurrentHashMap<String, Kernel> byKey = new ConcurrentHashMap<>();
  private final List<CUmodule> modules = new ArrayList<>();

  /**
   * A pipeline's kernel, or why it has none.
   *
   * @param function the loaded kernel, or null when the pipeline runs on the interpreter
   * @param entry the kernel's entry name (null when the generator declined)
   * @param reason why there is no kernel, or null
   * @param compileNanos how long compiling took (0 when nothing was compiled)
   */
  record Kernel(CUfunction function, String entry, String reason, long compileNanos) {
    boolean generated() {
      return function != null;
    }
  }

  GeneratedKernels(CudaDevice device) {
    this.device = device;
  }

  /**
   * A kernel looked up, and how long this lookup spent generating, compiling and loading it (0
   * when it was there already).
   */
  record Lookup(Kernel kernel, long buildNanos) {}

  /** The generated phase-1 filter-project kernel of {@code program} over {@code inputs}. */
  Lookup filterProject(Program program, List<InputSpec> inputs) {
    return lookup(FilterProjectGenerator.key(program, inputs), "filter-project", program,
        () -> FilterProjectGenerator.generate(program, inputs));
  }

  /**
   * The generated update kernel of an aggregation pipeline ({@link AggregateUpdateGenerator}) for
   * join tables of which those in {@code probeFiltered} have a probe filter.
   */
  Lookup aggregateUpdate(Program program, List<InputSpec> inputs, AggregateSpec spec,
      BitSet probeFiltered) {
    return aggregateUpdate(program, inputs, spec, probeFiltered, 1);
  }

  /**
   * {@link #aggregateUpdate(Program, List, AggregateSpec, BitSet)}, its groups sliced among
   * {@code slices} blocks where that is more than 1 ({@link GroupSlices}).
   */
  Lookup aggregateUpdate(Program program, List<InputSpec> inputs, AggregateSpec spec,
      BitSet probeFiltered, int slices) {
    KernelFeatures features = features();
    return lookup(
        AggregateUpdateGenerator.key(program, inputs, spec, features, probeFiltered, slices),
        "aggregation", program, () -> AggregateUpdateGenerator.generate(program, inputs, spec,
            features, probeFiltered, slices));
  }

  /**
   * What this device gives the kernels generated for it. Asked each time, not kept from the
   * constructor: CudaDevice builds this object before it has read its attributes (a field set
   * then would say compute capability 0.0 and no shared memory).
   */
  KernelFeatures features() {
    return KernelFeatures.forDevice(device.computeMajor(), device.computeMinor(),
        new KernelFeatures.SharedMemory(device.sharedBytesPerMultiprocessor(),
            device.sharedBytesPerBlockOptIn(), device.reservedSharedBytesPerBlock()));
  }

  /** Writes a kernel's PTX; declines with the reason. */
  private interface Generator {
    GeneratedKernel generate() throws CodegenUnsupportedException;
  }

  private Lookup lookup(String key, String what, Program program, Generator generator) {
    long[] spent = {0};
    Kernel kernel = byKey.computeIfAbsent(key, k -> {
      long started = System.nanoTime();
      Kernel built = build(what, program, generator);
      spent[0] = System.nanoTime() - started;
      return built;
    });
    return new Lookup(kernel, spent[0]);
  }

  private Kernel build(String what, Program program, Generator generator) {
    GeneratedKernel kernel;
    try {
      kernel = generator.generate();
    } catch (CodegenUnsupportedException e) {
      LOG.info("Tessera: a {} pipeline runs on the interpreter kernel: {}", what,
          e.getMessage());
      return new Kernel(null, null, e.getMessage(), 0);
    }
    try {
      return load(kernel);
    } catch (RuntimeException e) {
      // A generator bug, or a compiler that cannot run here: the interpreter is always right.
      LOG.warn("Tessera: generated kernel {} could not be compiled or loaded; the pipeline runs"
          + " on the interpreter kernel: {}\n{}", kernel.entry(), e.getMessage(),
          program.disassemble());
      return new Kernel(null, kernel.entry(), "compiling the generated kernel failed: "
          + e.getMessage(), 0);
    }
  }

  private Kernel load(GeneratedKernel kernel) {
    Optional<String> arch = PtxCompiler.available()
        ? CubinTarget.forDevice(device.computeMajor(), device.computeMinor()) : Optional.empty();
    byte[] image;
    long nanos = 0;
    // The driver's JIT takes no ptxas options, so not GeneratedModule.DFOR_OPTION: a kernel that
    // decodes GPU-DFOR tiles may crash it, and the process with it (CUDA 13.0's ptxas does).
    boolean driverMayCompile = !GeneratedModule.decodesDforTiles(kernel);
    if (arch.isPresent()) {
      GeneratedModule.Compilation compilation = GeneratedModule.compilation(kernel, arch.get());
      CompiledKernel compiled = compilation.used();
      CompileReport report = compiled.report(kernel.entry());
      nanos = compiled.compileNanos();
      String rejection = GeneratedModule.rejection(report);
      CompletableFuture<CompiledKernel> againAhead = compilation.againAhead();
      if (rejection != null && report.registers() <= GeneratedModule.MAX_REGISTERS
          && compilation.firstFormFits() && driverMayCompile) {
        // Only a stack frame or spills: the driver's compiler may do without. What the in-jar
        // compiler makes of it with other options, needed where the driver's does not, compiles
        // meanwhile (one such compile of a wide projection took about 125 ms on an H100 host).
        long driverStarted = System.nanoTime();
        if (againAhead == null) {
          againAhead = GeneratedModule.compileAgainAhead(kernel, arch.get());
        }
        Kernel jit = loadThroughTheDriver(kernel, report, nanos);
        if (jit != null) {
          return jit;
        }
        nanos += System.nanoTime() - driverStarted;
        rejection += "; the driver's compiler gave it local memory too";
      }
      if (rejection != null) {
        // The in-jar compiler with other options (-O1, a register cap).
        long waitStarted = System.nanoTime();
        CompiledKernel again = GeneratedModule.compiledAgain(againAhead, kernel, arch.get());
        if (again != null) {
          nanos += againAhead != null ? System.nanoTime() - waitStarted : again.compileNanos();
          compiled = again;
          report = again.report(kernel.entry());
          LOG.info("Tessera: {} compiled again with other options: {}", kernel.entry(),
              report.summary());
          rejection = null;
        }
      }
      if (rejection != null) {
        LOG.warn("Tessera: generated kernel {} not used: {}", kernel.entry(), rejection);
        return new Kernel(null, kernel.entry(), rejection, nanos);
      }
      LOG.info("Tessera: compiled {} for {} in {} ms: {}", kernel.entry(), arch.get(),
          nanos / 1_000_000, report.summary());
      image = compiled.cubin();
    } else if (!driverMayCompile) {
      String reason = "only the driver's compiler knows this device, and it is not given kernels"
          + " that decode GPU-DFOR tiles (its ptxas crashed on some)";
      LOG.warn("Tessera: generated kernel {} not used: {}", kernel.entry(), reason);
      return new Kernel(null, kernel.entry(), reason, 0);
    } else {
      image = driverImage(kernel);
    }
    Loaded loaded = loadImage(kernel, image);
    keep(loaded.module());
    return new Kernel(loaded.function(), kernel.entry(), null, nanos);
  }

  private record Loaded(CUmodule module, CUfunction function) {}

  /**
   * What the driver's JIT compiles: the kernel's PTX text, NUL-terminated, its register ask
   * lifted as the in-jar compiler's second try lifts it ({@link GeneratedModule#withMaxRegisters}).
   */
  private static byte[] driverImage(GeneratedKernel kernel) {
    byte[] text = GeneratedModule.withMaxRegisters(GeneratedModule.text(kernel))
        .getBytes(StandardCharsets.US_ASCII);
    return java.util.Arrays.copyOf(text, text.length + 1);
  }

  private Loaded loadImage(GeneratedKernel kernel, byte[] image) {
    device.makeCurrent();
    CUmodule module = new CUmodule();
    check(cuModuleLoadData(module, image), "loading generated kernel " + kernel.entry());
    CUfunction function = new CUfunction();
    try {
      check(cuModuleGetFunction(function, module, kernel.entry()),
          "looking up generated kernel " + kernel.entry());
    } catch (GpuException e) {
      cuModuleUnload(module);
      throw e;
    }
    return new Loaded(module, function);
  }

  private void keep(CUmodule module) {
    synchronized (modules) {
      modules.add(module);
    }
  }

  /**
   * The kernel compiled by the driver's JIT from its PTX, when that needs no local memory (no
   * stack, no spills) and at most {@link GeneratedModule#MAX_REGISTERS} registers; else null
   * (the module unloaded). Its compile time adds the in-jar compile's {@code inJarNanos}.
   *
   * <p>The driver gets the kernel's first form, even where the in-jar compile went on to a
   * leaner one, and only where the in-jar compiler fitted that form in the registers ({@link
   * GeneratedModule.Compilation#firstFormFits}). Given the leaner form instead, the driver
   * compiled WideProjectionBench's kernel 104 ms sooner (482 against 586 ms) into 48 registers
   * without local memory, which ran 4.8% slower (2.098 against 2.002 ms) than the in-jar
   * compiler's -O1 kernel of 64 registers that the first form's refusal leads to (H100,
   * 2026-12-06).
   */
  private Kernel loadThroughTheDriver(GeneratedKernel kernel, CompileReport inJar,
      long inJarNanos) {
    long started = System.nanoTime();
    Loaded loaded = loadImage(kernel, driverImage(kernel));
    int[] local = new int[1];
    int[] registers = new int[1];
    check(cuFuncGetAttribute(local, CUfunction_attribute.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
        loaded.function()), "reading generated kernel " + kernel.entry() + "'s local memory");
    check(cuFuncGetAttribute(registers, CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS,
        loaded.function()), "reading generated kernel " + kernel.entry() + "'s registers");
    long nanos = inJarNanos + System.nanoTime() - started;
    if (local[0] != 0 || registers[0] > GeneratedModule.MAX_REGISTERS) {
      LOG.info("Tessera: the driver's compiler gave {} {} B of local memory and {} registers",
          kernel.entry(), local[0], registers[0]);
      cuModuleUnload(loaded.module());
      return null;
    }
    LOG.info("Tessera: compiled {} through the driver in {} ms: {} registers, no local memory"
        + " (the in-jar compiler: {})", kernel.entry(), nanos / 1_000_000, registers[0],
        inJar.summary());
    keep(loaded.module());
    return new Kernel(loaded.function(), kernel.entry(), null, nanos);
  }

  /** Why each pipeline without a kernel has none, one reason a key (for tests). */
  List<String> reasons() {
    return byKey.values().stream().map(Kernel::reason).filter(Objects::nonNull)
        .toList();
  }

  /** The keys of the pipelines that run as generated kernels (for tests). */
  List<String> generatedKeys() {
    return byKey.entrySet().stream().filter(e -> e.getValue().generated())
        .map(Map.Entry::getKey).toList();
  }

  /** How many generated kernels are loaded (for tests). */
  int loadedCount() {
    synchronized (modules) {
      return modules.size();
    }
  }

  /** Unloads every module; the device's context must be current. */
  void unload() {
    synchronized (modules) {
      modules.forEach(m -> cuModuleUnload(m));
      modules.clear();
    }
    byKey.clear();
  }
}
