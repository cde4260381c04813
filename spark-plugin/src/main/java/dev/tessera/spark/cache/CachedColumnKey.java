package dev.tessera.spark.cache;

import dev.tessera.gpu.memory.DeviceStore;
import java.util.UUID;
import org.apache.spark.SparkEnv;
import org.apache.spark.storage.RDDBlockId;

/**
 * The device store's name for the device copy of one cached column: its batch
 * ({@link TesseraCachedBatch#id()}), its ordinal in the cached schema, and the block of Spark's
 * cache that holds the batch (the cached RDD and partition), whose lifetime the copy follows.
 */
public record CachedColumnKey(UUID batch, int column, int rddId, int partition) {

  /**
   * Releases the device copies whose cached block this executor's block manager no longer holds:
   * the table was unpersisted (or Spark evicted or lost the block, which is recomputed into new
   * batches). A device copy thus lives no longer than the host copy it mirrors. Runs when a cache
   * scan starts a task; returns how many copies were released.
   */
  public static int releaseUnpersisted(DeviceStore store) {
    SparkEnv env = SparkEnv.get();
    if (env == null) {
      return 0;
    }
    return store.removeIf(key -> key instanceof CachedColumnKey k
        && env.blockManager().getStatus(new RDDBlockId(k.rddId(), k.partition())).isEmpty());
  }
}
