import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.rapaio.jupyter.kernel.MainApp;
import org.rapaio.jupyter.kernel.channels.Channels;
import org.rapaio.jupyter.kernel.core.ConnectionProperties;
import org.rapaio.jupyter.kernel.core.Transform;

/**
 * Starts rapaio-jupyter-kernel 2.3.0 as its MainApp does, without its start-up race: its
 * Channels.connect binds the sockets and starts the shell thread, then initialises JShell (seconds
 * on a loaded machine), and only then fills its message handlers. A kernel_info_request that
 * arrives in between finds no handler map, the shell thread dies on a NullPointerException and
 * the kernel never answers. Here the map is, until connect replaces it, one whose lookups wait
 * for the real handlers. Run by the kernelspec (bin/kernelspec.sh) in source-file mode.
 */
public final class TesseraKernelLauncher {
  /** Held so that its level stays: the kernel logs every message it handles at INFO. */
  private static final Logger KERNEL_LOGGING = Logger.getLogger("org.rapaio");

  public static void main(String[] args) throws Exception {
    KERNEL_LOGGING.setLevel(Level.WARNING);
    if (args.length != 1) {
      throw new IllegalArgumentException("usage: TesseraKernelLauncher CONNECTION_FILE");
    }
    String json = Files.readString(Path.of(args[0]));
    ConnectionProperties props = Transform.fromJson(json, ConnectionProperties.class);
    Channels channels = new Channels(props);
    Field handlers = Channels.class.getDeclaredField("handlers");
    handlers.setAccessible(true);
    handlers.set(channels, new WaitingHandlers(channels, handlers));
    channels.connect(MainApp.kernel);
    channels.joinUntilClose();
  }

  /** Stands in for the handler map until connect installs and fills the real one. */
  private static final class WaitingHandlers extends HashMap<Object, Object> {
    private static final long TIMEOUT_MILLIS = 300_000;
    private final transient Channels channels;
    private final transient Field field;

    WaitingHandlers(Channels channels, Field field) {
      this.channels = channels;
      this.field = field;
    }

    @Override
    public Object get(Object key) {
      long deadline = System.currentTimeMillis() + TIMEOUT_MILLIS;
      try {
        while (System.currentTimeMillis() < deadline) {
          Object current = field.get(channels);
          if (current != this) {
            Thread.sleep(200); // connect fills the new map right after installing it
            return ((Map<?, ?>) field.get(channels)).get(key);
          }
          Thread.sleep(50);
        }
      } catch (IllegalAccessException e) {
        throw new IllegalStateException(e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return null;
    }
  }
}
