import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.rapaio.jupyter.kernel.MainApp;
import org.rapaio.jupyter.kernel.channels.Channels;
import org.rapaio.jupyter.kernel.core.ConnectionProperties;
import org.rapaio.jupyter.kernel.core.RapaioKernel;
import org.rapaio.jupyter.kernel.core.Transform;

/**
 * Starts rapaio-jupyter-kernel 2.3.0 as its MainApp does, without its start-up race: its
 * Channels.connect binds the sockets and starts the shell thread before it fills its message
 * handlers. A kernel_info_request that arrives in between finds no handler map, the shell thread
 * dies on a NullPointerException and the kernel never answers. Here the map is, until connect
 * replaces it, one whose lookups wait for connect to return and then read the real handlers. A
 * lookup in the moment between connect installing its map and filling it still misses: the shell
 * logs "Unhandled message: kernel_info_request" and the client, which asks every second, gets its
 * answer next time. Run by the kernelspec (bin/kernelspec.sh) in source-file mode. (A kernel can
 * still start deaf, in JeroMQ; see bin/execute.py, which restarts it.)
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
    RapaioKernel kernel = MainApp.kernel; // initialises JShell, before any socket is bound
    Channels channels = new Channels(props);
    Field handlers = Channels.class.getDeclaredField("handlers");
    handlers.setAccessible(true);
    CountDownLatch connected = new CountDownLatch(1);
    handlers.set(channels, new WaitingHandlers(channels, handlers, connected));
    channels.connect(kernel);
    connected.countDown();
    channels.joinUntilClose();
  }

  /** Stands in for the handler map until connect has installed and filled the real one. */
  private static final class WaitingHandlers extends HashMap<Object, Object> {
    private static final long TIMEOUT_SECONDS = 300;
    private final transient Channels channels;
    private final transient Field field;
    private final transient CountDownLatch connected;

    WaitingHandlers(Channels channels, Field field, CountDownLatch connected) {
      this.channels = channels;
      this.field = field;
      this.connected = connected;
    }

    @Override
    public Object get(Object key) {
      try {
        if (!connected.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
          return null; // the shell logs the message as unhandled; the client asks again
        }
        // The latch orders connect's writes of the field and the map before this read.
        return ((Map<?, ?>) field.get(channels)).get(key);
      } catch (IllegalAccessException e) {
        throw new IllegalStateException(e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return null;
      }
    }
  }
}
