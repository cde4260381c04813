package dev.tessera.gpu.cuda;

import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;

/**
 * Conversions between JCuda pointer objects and the plain {@code long} addresses the rest of
 * Tessera uses (pool blocks, Arrow buffers, kernel arguments). JCuda keeps an address as
 * base + byte offset inside its pointer objects; these subclasses read and write it.
 */
final class NativeAddresses {
  private NativeAddresses() {}

  /** A device pointer whose address can be read after cuMemAlloc fills it in. */
  static final class DevicePointer extends CUdeviceptr {
    private static final CUdeviceptr NULL = new CUdeviceptr();

    DevicePointer() {}

    /** A pointer to an existing device address. */
    DevicePointer(long address) {
      super(NULL, address);
    }

    long address() {
      return getNativePointer() + getByteOffset();
    }
  }

  /** A host pointer: pinned memory from cuMemHostAlloc, or any address handed to the driver. */
  static final class HostPointer extends Pointer {
    HostPointer() {}

    HostPointer(long address) {
      super(address);
    }

    long address() {
      return getNativePointer() + getByteOffset();
    }
  }

  static CUdeviceptr device(long address) {
    return new DevicePointer(address);
  }

  static Pointer host(long address) {
    return new HostPointer(address);
  }
}
