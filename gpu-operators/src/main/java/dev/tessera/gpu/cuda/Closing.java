package dev.tessera.gpu.cuda;

import java.util.List;

/** Closing a CUDA operator's temporary buffers, whether or not the operation failed. */
final class Closing {
  private Closing() {}

  /**
   * Closes every resource and empties the list. A failure to close is added to {@code failure}
   * when there is one (the operation's own error comes first), else thrown after all are closed.
   */
  static void closeAll(List<AutoCloseable> resources, Throwable failure) {
    RuntimeException closing = null;
    for (AutoCloseable resource : resources) {
      try {
        resource.close();
      } catch (Exception e) {
        if (failure != null) {
          failure.addSuppressed(e);
        } else if (closing == null) {
          closing = new IllegalStateException("freeing a temporary buffer failed", e);
        } else {
          closing.addSuppressed(e);
        }
      }
    }
    resources.clear();
    if (closing != null) {
      throw closing;
    }
  }
}
