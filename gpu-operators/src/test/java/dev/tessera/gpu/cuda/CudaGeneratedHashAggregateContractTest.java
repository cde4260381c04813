package dev.tessera.gpu.cuda;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.RuntimeOptions;

/**
 * The hash-aggregate contract on CUDA with generated kernels on: every update runs its
 * pipeline's generated kernel wherever the generator covers it.
 */
@RequiresCuda
class CudaGeneratedHashAggregateContractTest extends CudaHashAggregateContractTest {
  @Override
  protected Backend openBackend(RuntimeOptions options) {
    // 6 GiB, not the suite's 2: rowsForShortcutModes' batch takes a group table of about 2 GB.
    return super.openBackend(options.withCodegen(true).withDeviceMemoryCap(6L << 30));
  }

  /**
   * A warp of the kernel's launch (a block of up to 1,024 threads a multiprocessor, 132 of them
   * on an H100 or H200) has about 70 items: more than ShortcutMode's misses and plain items.
   */
  @Override
  protected int rowsForShortcutModes() {
    return 10_000_000;
  }
}
