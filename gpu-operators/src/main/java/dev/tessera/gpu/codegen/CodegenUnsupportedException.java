package dev.tessera.gpu.codegen;

/**
 * A pipeline the generator does not cover (an opcode it has no emitter for, an operator it does
 * not generate): the pipeline runs on the interpreter kernels, and the message says why.
 */
public final class CodegenUnsupportedException extends Exception {
  private static final long serialVersionUID = 1L;

  public CodegenUnsupportedException(String reason) {
    super(reason);
  }
}
