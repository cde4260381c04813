package dev.tessera.gpu.diagnose;

import dev.tessera.gpu.GpuException;
import dev.tessera.gpu.RuntimeOptions;
import dev.tessera.gpu.cuda.CudaAvailability;
import dev.tessera.gpu.cuda.CudaBackend;
import dev.tessera.gpu.cuda.CudaDevice;
import dev.tessera.gpu.cuda.CudaStream;
import dev.tessera.gpu.cuda.DeviceTimer;
import dev.tessera.gpu.cuda.KernelModule;
import dev.tessera.gpu.memory.DeviceBuffer;
import java.io.PrintStream;
import org.apache.arrow.memory.ArrowBuf;

/**
 * The device report a user runs first: CUDA driver, device, compute capability and memory; loads
 * the kernels and checks the smoke kernel's result; measures pinned host-to-device,
 * device-to-host and device-to-device bandwidth. Exits 0 when all of it worked, 1 when a check
 * failed, 2 when there is no usable CUDA device or the arguments are wrong.
 */
public final class Diagnose {
  static final int OK = 0;
  static final int CHECK_FAILED = 1;
  static final int NO_DEVICE = 2;

  private static final long MiB = 1L << 20;
  private static final int SMOKE_VALUES = 1_000_003; // not a whole number of tiles, on purpose
  private static final long HOST_COPY_BYTES = 256 * MiB;
  private static final long DEVICE_COPY_BYTES = 1024 * MiB;
  private static final int REPEATS = 10;

  private Diagnose() {}

  public static void main(String[] args) {
    System.exit(run(args, System.out, System.err));
  }

  /** Runs the diagnostic, printing the report to {@code out}; returns the exit code. */
  public static int run(String[] args, PrintStream out, PrintStream err) {
    int ordinal = 0;
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--device") && i + 1 < args.length) {
        try {
          ordinal = Integer.parseInt(args[++i]);
        } catch (NumberFormatException e) {
          err.println("diagnose: --device takes a device number (0, 1, ...), not '" + args[i] + "'");
          return NO_DEVICE;
        }
      } else if (args[i].equals("--help") || args[i].equals("-h")) {
        out.println("usage: diagnose [--device N]   report the CUDA device N (default 0), check"
            + " the kernels and measure bandwidth");
        return OK;
      } else {
        err.println("diagnose: unknown argument '" + args[i] + "' (try --help)");
        return NO_DEVICE;
      }
    }

    out.println("Tessera device diagnostic");
    CudaAvailability availability = CudaAvailability.get();
    if (!availability.isAvailable()) {
      err.println("No usable CUDA device: " + availability.unavailableReason() + ".");
      err.println("Tessera needs an NVIDIA GPU and driver to run kernels; without one, queries"
          + " run on Spark's CPU operators.");
      return NO_DEVICE;
    }
    CudaBackend backend;
    try {
      backend = CudaBackend.open(RuntimeOptions.defaults().withDeviceOrdinal(ordinal));
    } catch (GpuException e) {
      err.println("diagnose: " + e.getMessage());
      return NO_DEVICE;
    }
    try (backend) {
      return report(backend, out);
    } catch (GpuException e) {
      err.println("diagnose: " + e.getMessage());
      return CHECK_FAILED;
    }
  }

  private static int report(CudaBackend backend, PrintStream out) {
    CudaDevice device = backend.device();
    long[] memory = device.memoryInfo();
    row(out, "CUDA driver", device.driverVersion() + " (" + CudaAvailability.get().deviceCount()
        + " device(s))");
    row(out, "device " + device.ordinal(), device.name());
    row(out, "compute capability", String.format("%d.%d (sm_%d%d), %d multiprocessors",
        device.computeMajor(), device.computeMinor(), device.computeMajor(),
        device.computeMinor(), device.multiprocessors()));
    row(out, "memory", String.format("%.1f GiB total, %.1f GiB free", gib(memory[1]),
        gib(memory[0])));
    row(out, "kernels", "loaded " + KernelModule.FATBIN_RESOURCE);

    try (CudaStream stream = backend.newStream()) {
      boolean smokeOk = smokeTest(backend, stream, out);
      measureHostCopies(backend, stream, out);
      measureDeviceCopy(backend, stream, out);
      row(out, "device memory pool", String.format("high-water %,d bytes",
          backend.deviceMemory().highWaterBytes()));
      out.println(smokeOk ? "All checks passed." : "A check FAILED: see above.");
      return smokeOk ? OK : CHECK_FAILED;
    }
  }

  private static boolean smokeTest(CudaBackend backend, CudaStream stream, PrintStream out) {
    long bytes = SMOKE_VALUES * 8L;
    long a = 3;
    long b = -11;
    try (ArrowBuf host = backend.stagingAllocator().buffer(bytes);
        DeviceBuffer x = DeviceBuffer.allocate(backend.deviceMemory(), bytes);
        DeviceBuffer y = DeviceBuffer.allocate(backend.deviceMemory(), bytes);
        DeviceBuffer sum = DeviceBuffer.allocate(backend.deviceMemory(), 8)) {
      long expectedSum = 0;
      for (int i = 0; i < SMOKE_VALUES; i++) {
        long value = i * 7L - 3;
        host.setLong(i * 8L, value);
        expectedSum += a * value + b;
      }
      stream.copyHostToDevice(host.memoryAddress(), x.address(), bytes);
      stream.fill(sum.address(), 8, (byte) 0);
      backend.smokeKernel().axpbSum(stream, x, y, SMOKE_VALUES, a, b, sum);
      stream.copyDeviceToHost(y.address(), host.memoryAddress(), bytes);
      stream.synchronize();
      int wrong = 0;
      for (int i = 0; i < SMOKE_VALUES; i++) {
        if (host.getLong(i * 8L) != a * (i * 7L - 3) + b) {
          wrong++;
        }
      }
      stream.copyDeviceToHost(sum.address(), host.memoryAddress(), 8);
      stream.synchronize();
      long gotSum = host.getLong(0);
      boolean ok = wrong == 0 && gotSum == expectedSum;
      row(out, "smoke kernel", ok
          ? String.format("OK (%,d values, sum %d)", SMOKE_VALUES, gotSum)
          : String.format("FAILED: %,d wrong values; sum %d, expected %d", wrong, gotSum,
              expectedSum));
      return ok;
    }
  }

  private static void measureHostCopies(CudaBackend backend, CudaStream stream, PrintStream out) {
    try (ArrowBuf host = backend.stagingAllocator().buffer(HOST_COPY_BYTES);
        DeviceBuffer device = DeviceBuffer.allocate(backend.deviceMemory(), HOST_COPY_BYTES);
        DeviceTimer timer = new DeviceTimer(backend.device())) {
      host.setZero(0, HOST_COPY_BYTES);
      stream.copyHostToDevice(host.memoryAddress(), device.address(), HOST_COPY_BYTES); // warm-up
      timer.start(stream);
      for (int i = 0; i < REPEATS; i++) {
        stream.copyHostToDevice(host.memoryAddress(), device.address(), HOST_COPY_BYTES);
      }
      float h2d = timer.stopMillis(stream);
      timer.start(stream);
      for (int i = 0; i < REPEATS; i++) {
        stream.copyDeviceToHost(device.address(), host.memoryAddress(), HOST_COPY_BYTES);
      }
      float d2h = timer.stopMillis(stream);
      row(out, "pinned host->device", gbPerSecond(HOST_COPY_BYTES * REPEATS, h2d)
          + " (" + HOST_COPY_BYTES / MiB + " MiB x " + REPEATS + ")");
      row(out, "pinned device->host", gbPerSecond(HOST_COPY_BYTES * REPEATS, d2h)
          + " (" + HOST_COPY_BYTES / MiB + " MiB x " + REPEATS + ")");
    }
  }

  private static void measureDeviceCopy(CudaBackend backend, CudaStream stream, PrintStream out) {
    try (DeviceBuffer from = DeviceBuffer.allocate(backend.deviceMemory(), DEVICE_COPY_BYTES);
        DeviceBuffer to = DeviceBuffer.allocate(backend.deviceMemory(), DEVICE_COPY_BYTES);
        DeviceTimer timer = new DeviceTimer(backend.device())) {
      stream.fill(from.address(), DEVICE_COPY_BYTES, (byte) 1);
      stream.copyDeviceToDevice(from.address(), to.address(), DEVICE_COPY_BYTES); // warm-up
      timer.start(stream);
      for (int i = 0; i < REPEATS; i++) {
        stream.copyDeviceToDevice(from.address(), to.address(), DEVICE_COPY_BYTES);
      }
      float millis = timer.stopMillis(stream);
      // A copy reads and writes every byte: count both, as the bandwidth floor does.
      row(out, "device->device", gbPerSecond(2 * DEVICE_COPY_BYTES * REPEATS, millis)
          + " (read + write, " + DEVICE_COPY_BYTES / MiB + " MiB x " + REPEATS + ")");
    }
  }

  private static String gbPerSecond(long bytes, float millis) {
    return String.format("%.1f GB/s", bytes / (millis / 1000.0) / 1e9);
  }

  private static double gib(long bytes) {
    return bytes / (double) (1L << 30);
  }

  private static void row(PrintStream out, String label, String value) {
    out.printf("  %-22s %s%n", label + ":", value);
  }
}
