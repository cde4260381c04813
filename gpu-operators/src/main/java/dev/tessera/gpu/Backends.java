package dev.tessera.gpu;

import dev.tessera.gpu.cuda.CudaBackend;
import dev.tessera.gpu.host.HostReferenceBackend;

/** Opens the backend a caller asked for. Nothing here substitutes one backend for the other. */
public final class Backends {
  private Backends() {}

  /**
   * Opens {@code kind} with {@code options}.
   *
   * @throws GpuException for CUDA when no usable CUDA device is present, saying why
   */
  public static Backend open(BackendKind kind, RuntimeOptions options) {
    return switch (kind) {
      case CUDA -> CudaBackend.open(options);
      case HOST_REFERENCE -> HostReferenceBackend.open(options);
    };
  }
}
