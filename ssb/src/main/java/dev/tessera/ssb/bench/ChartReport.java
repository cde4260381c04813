package dev.tessera.ssb.bench;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * The report as a PNG chart: the median CPU and Tessera time of each query as grouped bars on a
 * log-scale y axis (the times span orders of magnitude). Rendered headless, with no display.
 */
public final class ChartReport {
  private ChartReport() {}

  public static void write(BenchReport report, Path png) throws IOException {
    System.setProperty("java.awt.headless", "true");
    List<String> names = new ArrayList<>();
    List<Double> cpu = new ArrayList<>();
    List<Double> tessera = new ArrayList<>();
    boolean severalInputs = report.results().stream().map(QueryResult::input).distinct()
        .count() > 1;
    for (QueryResult r : report.results()) {
      names.add(severalInputs ? r.query() + " " + r.input() : r.query());
      // A log axis cannot show 0: a run under 1 microsecond is drawn at 1 microsecond.
      cpu.add(Math.max(r.cpuMedianMillis(), 1e-3));
      tessera.add(Math.max(r.gpuMedianMillis(), 1e-3));
    }
    CategoryChart chart = new CategoryChartBuilder().width(Math.max(800, 70 * names.size()))
        .height(500)
        .title(String.format("SSB SF %s: Spark CPU vs %s", report.scaleFactor(),
            report.tesseraLabel()))
        .xAxisTitle("query").yAxisTitle("median time (ms, log scale)").build();
    chart.getStyler().setYAxisLogarithmic(true);
    // Bars start at 0 unless told otherwise, which a log axis cannot show: the axis spans the
    // decades around the data instead.
    double min = Math.min(Collections.min(cpu), Collections.min(tessera));
    double max = Math.max(Collections.max(cpu), Collections.max(tessera));
    chart.getStyler().setYAxisMin(Math.pow(10, Math.floor(Math.log10(min))));
    chart.getStyler().setYAxisMax(Math.pow(10, Math.ceil(Math.log10(max * 1.0001))));
    chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNE);
    chart.getStyler().setOverlapped(false);
    chart.addSeries("Spark CPU", names, cpu);
    chart.addSeries(report.tesseraLabel(), names, tessera);
    BitmapEncoder.saveBitmap(chart, png.toString(), BitmapEncoder.BitmapFormat.PNG);
  }
}
