package dev.tessera.spark;

/** What {@code spark.tessera.explain} asks the plan rewrite to log. */
public enum ExplainLevel {
  /** Log nothing. */
  NONE,
  /** Log the nodes and expressions that cannot run on the GPU, and why. */
  NOT_ON_GPU,
  /** Log every node and expression: on the GPU, on the CPU by design, or not on the GPU. */
  ALL;

  /** Whether a node that runs as {@code kind} says is logged. */
  public boolean shows(ExplainLog.Kind kind) {
    return this == ALL || (this == NOT_ON_GPU && kind == ExplainLog.Kind.NOT_ON_GPU);
  }
}
