package dev.tessera.gpu.expr;

import dev.tessera.gpu.column.DeviceColumn;

/**
 * What {@link HostInterpreter} reads of a join table for PROBE and LOAD_BUILD: the host reference
 * backend's join tables implement it (the interpreter lives here, the tables in the backend).
 */
public interface HostProbeTable {
  /**
   * The smallest build row whose keys equal {@code key}, or -1 when none does.
   *
   * @param key one part per key column, none NULL: a {@code Long} for integral, date, timestamp
   *     and decimal keys (sign-extended, as LOAD_COLUMN loads them), a {@code byte[]} of UTF-8
   *     for string keys
   */
  int firstMatch(Object[] key);

  /** Payload column {@code column}, in host-addressable memory, one value per build row. */
  DeviceColumn payload(int column);
}
