package dev.tessera.ssb.bench;

import java.util.List;

/**
 * One query's measurements on one input: Spark alone (Tessera off) and with Tessera on.
 *
 * @param query the query's name, e.g. "2.1"
 * @param input "parquet" or "cached"
 * @param rows the number of result rows
 * @param cpuMillis each measured run's wall time with Tessera off (warm-up excluded)
 * @param gpuMillis each measured run's wall time with Tessera on
 * @param profile the plan of the last run with Tessera on
 * @param mismatch null when every run with Tessera on gave Spark's result, else the difference
 */
public record QueryResult(String query, String input, long rows, List<Double> cpuMillis,
    List<Double> gpuMillis, PlanProfile profile, String mismatch) {
  public QueryResult {
    cpuMillis = List.copyOf(cpuMillis);
    gpuMillis = List.copyOf(gpuMillis);
  }

  public double cpuMedianMillis() {
    return Stats.median(cpuMillis);
  }

  public double gpuMedianMillis() {
    return Stats.median(gpuMillis);
  }

  public double speedUp() {
    return Stats.speedUp(cpuMedianMillis(), gpuMedianMillis());
  }

  public boolean matches() {
    return mismatch == null;
  }

  /**
   * The least time the kernels' reads take at {@code peakGbps} (GB/s, 10^9 bytes), in ms; NaN
   * when the bytes or the peak are unknown.
   */
  public double floorMillis(double peakGbps) {
    if (!(peakGbps > 0) || profile.gpuBytesRead() <= 0) {
      return Double.NaN;
    }
    return profile.gpuBytesRead() / (peakGbps * 1e9) * 1e3;
  }

  /** How many times the bandwidth floor the median time with Tessera on is; NaN if unknown. */
  public double timesFloor(double peakGbps) {
    double floor = floorMillis(peakGbps);
    return Double.isNaN(floor) ? Double.NaN : gpuMedianMillis() / floor;
  }
}
