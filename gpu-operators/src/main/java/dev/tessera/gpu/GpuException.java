package dev.tessera.gpu;

/** A failure of the device runtime or an operator, with a message a user can act on. */
public class GpuException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public GpuException(String message) {
    super(message);
  }

  public GpuException(String message, Throwable cause) {
    super(message, cause);
  }
}
