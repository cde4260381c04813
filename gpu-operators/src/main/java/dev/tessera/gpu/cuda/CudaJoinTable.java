package dev.tessera.gpu.cuda;

import dev.tessera.gpu.join.JoinTable;
import dev.tessera.gpu.join.JoinTableSchema;
import dev.tessera.gpu.memory.DeviceBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;

/**
 * A {@link JoinTable} on the device, built by {@link CudaHashJoin}: it owns every buffer its
 * descriptor (program.cuh's JoinTableView) points at, and frees them all on {@link #close}. The
 * descriptor's bytes are kept on the host too, so that a program's plan can copy them into its
 * own tables section (ProgramPlan) without reading the device.
 */
final class CudaJoinTable implements JoinTable {
  // ---- program.cuh struct JoinTableView (ProgramAbiTest-style checks in HashJoinAbiTest) ----------
  /** JoinTableView's size: 16 words. */
  static final int TABLE_VIEW_BYTES = 128;
  static final int VIEW_KEYS = 0;
  static final int VIEW_PAYLOADS = 8;
  static final int VIEW_SLOTS = 16;
  static final int VIEW_HASHES = 24;
  static final int VIEW_NEXT = 32;
  static final int VIEW_GROUP_SIZES = 40;
  static final int VIEW_SLOT_MASK = 48;
  static final int VIEW_ROWS = 56;
  static final int VIEW_KEY_COUNT = 64;
  static final int VIEW_PAYLOAD_COUNT = 68;
  static final int VIEW_DIRECT = 72;
  static final int VIEW_DIRECT_MIN = 80;
  static final int VIEW_DIRECT_SPAN = 88;
  static final int VIEW_FILTER = 96;
  static final int VIEW_FILTER_SHIFT = 104;
  static final int VIEW_DIRECT_IDENTITY = 112;

  private final JoinTableSchema schema;
  private final long buildRows;
  private final boolean uniqueKeys;
  private final long stringPayloadBytes;
  private final long longestStringPayload;
  private final long viewAddress;
  private final byte[] view;
  private final List<DeviceBuffer> buffers;
  private boolean closed;

  /**
   * Takes ownership of {@code buffers} (every buffer the descriptor reaches). {@code view} is the
   * descriptor's host image, {@code viewAddress} where its device copy lies.
   */
  CudaJoinTable(JoinTableSchema schema, long buildRows, boolean uniqueKeys,
      long stringPayloadBytes, long longestStringPayload, byte[] view, long viewAddress,
      List<DeviceBuffer> buffers) {
    if (view.length != TABLE_VIEW_BYTES) {
      throw new IllegalArgumentException("a JoinTableView is " + TABLE_VIEW_BYTES + " bytes");
    }
    this.schema = schema;
    this.buildRows = buildRows;
    this.uniqueKeys = uniqueKeys;
    this.stringPayloadBytes = stringPayloadBytes;
    this.longestStringPayload = longestStringPayload;
    this.view = view.clone();
    this.viewAddress = viewAddress;
    this.buffers = new ArrayList<>(buffers);
  }

  @Override
  public JoinTableSchema schema() {
    return schema;
  }

  @Override
  public long buildRows() {
    return buildRows;
  }

  @Override
  public boolean uniqueKeys() {
    return uniqueKeys;
  }

  /** The sizes of every buffer it owns, the descriptor's device copy included. */
  @Override
  public synchronized long deviceBytes() {
    long total = 0;
    for (DeviceBuffer b : buffers) {
      total += b.size();
    }
    return total;
  }

  /** Bytes of all string payload columns together (a bound on what LOAD_BUILD yields). */
  long stringPayloadBytes() {
    return stringPayloadBytes;
  }

  /** Bytes of the longest string among the string payload columns (0 without any). */
  long longestStringPayload() {
    return longestStringPayload;
  }

  /** The device address of the descriptor (what the build and expand kernels take). */
  long viewAddress() {
    checkOpen();
    return viewAddress;
  }

  /** The device address of the payload columns' InputColumns (JoinTableView.payloads). */
  long payloadColumnsAddress() {
    return viewWord(VIEW_PAYLOADS);
  }

  /** Whether the table has a probe filter (ProbeFilter; JoinTableView.filter not 0). */
  boolean hasProbeFilter() {
    return viewWord(VIEW_FILTER) != 0;
  }

  /** The descriptor's 8-byte word at {@code offset} (one of the VIEW_ offsets). */
  long viewWord(int offset) {
    checkOpen();
    return java.nio.ByteBuffer.wrap(view).order(java.nio.ByteOrder.LITTLE_ENDIAN)
        .getLong(offset);
  }

  /** Copies the descriptor into a staging buffer (a plan's tables section). */
  void writeView(ArrowBuf host, long at) {
    checkOpen();
    host.setBytes(at, view);
  }

  /** A CUDA table, or a clear error for a table another backend built. */
  static CudaJoinTable of(JoinTable table) {
    if (table instanceof CudaJoinTable cuda) {
      return cuda;
    }
    throw new IllegalArgumentException("the CUDA backend probes only join tables it built, not "
        + (table == null ? "null" : table.getClass().getName()));
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("join table used after close");
    }
  }

  /**
   * Frees the table's device memory. The caller must have waited for every kernel that probes
   * it (operators synchronize their stream before returning, so a returned probe is done).
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    Closing.closeAll(new ArrayList<>(buffers), null);
    buffers.clear();
  }
}
