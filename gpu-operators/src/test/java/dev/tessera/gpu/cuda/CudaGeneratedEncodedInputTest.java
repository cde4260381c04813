package dev.tessera.gpu.cuda;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.EncodedInputContractTest;
import dev.tessera.gpu.RuntimeOptions;
import dev.tessera.gpu.codec.EncodedColumn;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The encoded-input contract with generated kernels: GPU-FOR and GPU-DFOR loads in PTX. */
@RequiresCuda
class CudaGeneratedEncodedInputTest extends EncodedInputContractTest {
  @Override
  protected Backend openBackend(RuntimeOptions options) {
    return Backends.open(BackendKind.CUDA, options.withCodegen(true));
  }

  /**
   * A global aggregate of GPU-FOR columns (a thread's items one run of consecutive rows) over a
   * batch of several rounds of the launch's 1,024-row tiles (as many as the multiprocessors hold
   * at once), the last round partial, a thread's run cut by the batch's end: the tile loop's and
   * the items' row arithmetic in 32 bits. The sizes are SSB SF10's batch, one no round divides,
   * and one just past a round of 132 multiprocessors' 8 blocks.
   */
  @ParameterizedTest
  @ValueSource(ints = {3_749_128, 2_000_003, 1_081_345})
  void aGlobalAggregateOfSeveralRoundsReadsTheDecodedValues(int rows) {
    assertGlobalAggregate(columns(rows, rows), List.of(0, 2, 9, 10), rows + " rows, GPU-FOR");
  }

  /**
   * The probed global and grouped aggregates over batches of several rounds: the rows waiting for
   * the probe in a warp's stack carry over from one tile to the next, and the pass after the
   * last tile takes those left (PrefilteredRows), and, grouped, what the kept-row queue holds.
   */
  @ParameterizedTest
  @ValueSource(ints = {3_749_128, 1_081_345})
  void probedAggregatesOfSeveralRoundsProbeEveryRowTheirConjunctsPass(int rows) {
    List<EncodedColumn> encoded = columns(rows, rows);
    assertProbedGlobalAggregate(encoded, false, rows + " rows");
    assertProbedGlobalAggregate(encoded, true, rows + " rows, overflowing");
    assertProbedGroupedAggregate(encoded, false, rows + " rows, grouped");
    assertProbedGroupedAggregate(encoded, true, rows + " rows, grouped, overflowing");
  }
}
