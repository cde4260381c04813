package dev.tessera.gpu.cuda;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import jcuda.Pointer;
import org.apache.arrow.memory.util.MemoryUtil;

/**
 * The {@code extra} argument of {@code cuLaunchKernel} that hands the driver one launch's packed
 * parameters ({@link KernelArgs}), written in native memory of the launching thread:
 *
 * <pre>
 *   [0, 40)   CU_LAUNCH_PARAM_BUFFER_POINTER, parameters, CU_LAUNCH_PARAM_BUFFER_SIZE, &amp;size,
 *             CU_LAUNCH_PARAM_END
 *   [40, 48)  size (a size_t)
 *   [48, ...) the parameters
 * </pre>
 *
 * JCuda passes a pointer that holds a plain address to the driver as it is, without the JNI work
 * it does for Java arrays. The driver copies the parameters within the launch call, so the
 * thread's next launch may overwrite them.
 */
final class LaunchParameters {
  // The values cuda.h gives the markers of the extra array.
  private static final long PARAM_END = 0x00;
  private static final long PARAM_BUFFER_POINTER = 0x01;
  private static final long PARAM_BUFFER_SIZE = 0x02;
  private static final int SIZE_AT = 5 * Long.BYTES;
  private static final int PARAMETERS_AT = SIZE_AT + Long.BYTES;
  /** Parameters are at most 8-aligned; 16 leaves room for anything a struct may ask. */
  private static final int ALIGNMENT = 16;

  private static final ThreadLocal<LaunchParameters> OF_THREAD =
      ThreadLocal.withInitial(LaunchParameters::new);

  private ByteBuffer buffer;
  private long address;
  private Pointer extra;

  private LaunchParameters() {
    allocate(512);
  }

  /** The extra argument for {@code args}; null where there are no parameters. */
  static Pointer extra(KernelArgs args) {
    return args.size() == 0 ? null : OF_THREAD.get().write(args);
  }

  private Pointer write(KernelArgs args) {
    if (PARAMETERS_AT + args.size() > buffer.capacity()) {
      allocate(2 * (PARAMETERS_AT + args.size()));
    }
    buffer.putLong(0, PARAM_BUFFER_POINTER);
    buffer.putLong(Long.BYTES, address + PARAMETERS_AT);
    buffer.putLong(2 * Long.BYTES, PARAM_BUFFER_SIZE);
    buffer.putLong(3 * Long.BYTES, address + SIZE_AT);
    buffer.putLong(4 * Long.BYTES, PARAM_END);
    buffer.putLong(SIZE_AT, args.size());
    args.copyTo(buffer.position(PARAMETERS_AT));
    return extra;
  }

  private void allocate(int bytes) {
    buffer = ByteBuffer.allocateDirect(bytes + ALIGNMENT).alignedSlice(ALIGNMENT)
        .order(ByteOrder.nativeOrder());
    address = MemoryUtil.getByteBufferAddress(buffer);
    extra = new NativeAddress(address);
  }

  /** A JCuda pointer holding a native address. */
  static final class NativeAddress extends Pointer {
    NativeAddress(long address) {
      super(address);
    }

    long address() {
      return getNativePointer();
    }
  }
}
