package dev.tessera.spark.expr;

/** Why an expression or a type cannot run on the GPU; the message is shown to the user as is. */
public final class Unsupported extends Exception {
  private static final long serialVersionUID = 1L;

  public Unsupported(String reason) {
    super(reason, null, false, false);
  }
}
