package dev.tessera.spark.rewrite;

import dev.tessera.gpu.codegen.AggregateUpdateGenerator;
import dev.tessera.gpu.codegen.FilterProjectGenerator;
import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.exec.TesseraHashAggregateExec;
import dev.tessera.spark.exec.TesseraPipelineExec;
import org.apache.spark.sql.execution.SparkPlan;

/**
 * Explain's note on how a GPU pipeline's program will run when generated kernels are on
 * ({@code spark.tessera.codegen.enabled}): as its own generated kernel, or on the interpreter
 * kernel and why. The executor decides per batch layout and may still fall back (a kernel the
 * compiler rejects); this says what the generator can do with the program.
 */
final class KernelNote {
  private KernelNote() {}

  /** The note for {@code converted}, or null (not a pipeline, or codegen off). */
  static String of(SparkPlan converted, TesseraConf conf) {
    if (!(converted instanceof TesseraPipelineExec pipeline)
        || !conf.get(TesseraConf.CODEGEN_ENABLED)) {
      return null;
    }
    if (pipeline instanceof TesseraHashAggregateExec aggregate) {
      String whyNot = AggregateUpdateGenerator.whyNotGenerated(
          pipeline.pipeline().fused().program(), aggregate.spec());
      return whyNot == null ? "its program and aggregate update run as a kernel generated for"
          + " them" : "its aggregate runs on the interpreter kernel: " + whyNot;
    }
    String whyNot = FilterProjectGenerator.whyNotGenerated(pipeline.pipeline().fused().program());
    return whyNot == null ? "its program runs as a kernel generated for it"
        : "its program runs on the interpreter kernel: " + whyNot;
  }
}
