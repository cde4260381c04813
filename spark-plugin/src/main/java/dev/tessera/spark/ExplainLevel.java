package dev.tessera.spark;

/** What {@code spark.tessera.explain} asks the plan rewrite to log. */
public enum ExplainLevel {
  /** Log nothing. */
  NONE,
  /** Log the nodes and expressions that stay on the CPU, and why. */
  NOT_ON_GPU,
  /** Log every node and expression, on the GPU or not. */
  ALL;

  /** Whether a node that does ({@code onGpu}) or does not run on the GPU is logged. */
  public boolean shows(boolean onGpu) {
    return this == ALL || (this == NOT_ON_GPU && !onGpu);
  }
}
