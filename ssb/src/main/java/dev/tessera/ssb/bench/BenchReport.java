package dev.tessera.ssb.bench;

import java.util.List;
import java.util.Map;

/**
 * A benchmark run's results and the settings that give them meaning.
 *
 * @param scaleFactor the SSB scale factor of the data
 * @param seed the generator's seed
 * @param runs measured runs per query and side (after one warm-up)
 * @param backend "cuda" or "host-reference"
 * @param device what ran Tessera's side, in words (the GPU's name, or why there is none)
 * @param peakGbps the device's peak memory bandwidth in GB/s, NaN when there is no GPU
 * @param peakSource where {@code peakGbps} comes from, in words
 * @param settings Spark settings given for both sides ({@code --conf}), in the order given
 * @param results one per query and input, in run order
 */
public record BenchReport(double scaleFactor, long seed, int runs, String backend, String device,
    double peakGbps, String peakSource, Map<String, String> settings,
    List<QueryResult> results) {
  /** What the report calls the times measured with Tessera on. */
  public static final String HOST_REFERENCE_LABEL = "host-reference (not GPU timings)";

  public BenchReport {
    settings = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(settings));
    results = List.copyOf(results);
  }

  /** Whether the Tessera side ran on a GPU, so that its times are GPU timings. */
  public boolean gpuTimings() {
    return "cuda".equals(backend);
  }

  /** The name of the Tessera side's times in every output. */
  public String tesseraLabel() {
    return gpuTimings() ? "GPU (Tessera, cuda)" : HOST_REFERENCE_LABEL;
  }

  public long mismatches() {
    return results.stream().filter(r -> !r.matches()).count();
  }
}
