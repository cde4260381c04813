package dev.tessera.gpu.cuda;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The CUDA sources beside the tests, for the checks of what Java and CUDA share. */
final class NativeSources {
  private NativeSources() {}

  /** The file at {@code relative} from the nearest folder up from here that has it. */
  static String read(String relative) throws IOException {
    for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
      Path candidate = dir.resolve(relative);
      if (Files.isRegularFile(candidate)) {
        return Files.readString(candidate);
      }
    }
    throw new IllegalStateException(relative + " not found");
  }
}
