package dev.tessera.gpu.codegen;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Compiled kernels kept on disk across processes, so that an executor that starts again (or
 * another on the same host) loads a pipeline's cubin instead of compiling it: the in-jar compiler
 * takes 0.1-1 s per generated kernel, which the first query of every new shape paid in every JVM.
 *
 * <p>An entry is named by the SHA-256 of everything the compile depends on: the compiler
 * library's version, the architecture, the options and the whole PTX module (the prelude
 * included), so a changed generator, prelude or compiler misses and compiles anew. It holds the
 * cubin and the compiler's info log (the reports are read from it again). Entries are written to
 * a temporary file and renamed into place, so a reader sees a whole entry or none; an entry that
 * does not read back whole (truncated, altered: its checksum fails) is deleted and compiled again.
 * A folder that cannot be written costs only the compile, with one warning.
 *
 * <p>One per process, set when the runtime opens ({@link #use}); none (every compile runs) until
 * then. Entries are not evicted: the folder holds one file per distinct kernel compiled.
 */
public final class KernelDiskCache {
  private static final Logger LOG = LoggerFactory.getLogger(KernelDiskCache.class);
  private static final String MAGIC = "tessera-kernel 1";
  private static final String SUFFIX = ".kernel";
  private static final KernelDiskCache NONE = new KernelDiskCache(null);
  private static volatile KernelDiskCache current = NONE;

  private final Path dir;
  private final AtomicBoolean warned = new AtomicBoolean();

  private KernelDiskCache(Path dir) {
    this.dir = dir;
  }

  /** The process's cache (one that keeps nothing when none was set). */
  public static KernelDiskCache current() {
    return current;
  }

  /** Keeps compiled kernels in {@code dir} from now on; null keeps none. */
  public static void use(Path dir) {
    current = dir == null ? NONE : new KernelDiskCache(dir);
  }

  /** The folder entries go to, or null when this cache keeps none. */
  public Path dir() {
    return dir;
  }

  /**
   * {@link PtxCompiler#compile(String, String, List)}, through the cache: an entry's cubin and
   * reports (with a {@link CompiledKernel#compileNanos} of 0) when it has one, else the compile,
   * which it then keeps.
   *
   * @throws PtxCompileException as the compile does (refusals are not kept)
   */
  public CompiledKernel compile(String ptx, String arch, List<String> options) {
    if (dir == null) {
      return PtxCompiler.compile(ptx, arch, options);
    }
    String key = key(ptx, arch, options);
    Path entry = dir.resolve(key + SUFFIX);
    CompiledKernel kept = read(entry, ptx, arch, options);
    if (kept != null) {
      return kept;
    }
    CompiledKernel compiled = PtxCompiler.compile(ptx, arch, options);
    write(entry, key, compiled);
    return compiled;
  }

  /** The name of the entry for this compile. */
  static String key(String ptx, String arch, List<String> options) {
    MessageDigest sha = sha256();
    String head = PtxCompiler.libraryVersion() + "\n" + arch + "\n"
        + String.join(" ", PtxCompiler.options(arch, options)) + "\n";
    sha.update(head.getBytes(StandardCharsets.UTF_8));
    sha.update(ptx.getBytes(StandardCharsets.UTF_8));
    return HexFormat.of().formatHex(sha.digest());
  }

  private CompiledKernel read(Path entry, String ptx, String arch, List<String> options) {
    if (!Files.isRegularFile(entry)) {
      return null;
    }
    try {
      byte[] bytes = Files.readAllBytes(entry);
      int body = bytes.length - 32;
      if (body < 0 || !Arrays.equals(Arrays.copyOfRange(bytes, body, bytes.length),
          digest(bytes, body))) {
        throw new IOException("its checksum does not match");
      }
      DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes, 0, body));
      if (!MAGIC.equals(in.readUTF())) {
        throw new IOException("it is not a Tessera kernel entry");
      }
      String log = new String(in.readNBytes(in.readInt()), StandardCharsets.UTF_8);
      byte[] cubin = in.readNBytes(in.readInt());
      return new CompiledKernel(arch, ptx, options, cubin, PtxasLog.parse(log, 0), 0, log);
    } catch (IOException | RuntimeException e) {
      LOG.warn("Tessera: kernel cache entry {} cannot be read ({}); compiling the kernel again",
          entry, e.getMessage());
      try {
        Files.deleteIfExists(entry);
      } catch (IOException ignored) {
        // The write below replaces it anyway.
      }
      return null;
    }
  }

  private void write(Path entry, String key, CompiledKernel compiled) {
    Path temp = null;
    try {
      ByteArrayOutputStream buffer = new ByteArrayOutputStream();
      DataOutputStream out = new DataOutputStream(buffer);
      out.writeUTF(MAGIC);
      byte[] log = compiled.infoLog().getBytes(StandardCharsets.UTF_8);
      out.writeInt(log.length);
      out.write(log);
      byte[] cubin = compiled.cubin();
      out.writeInt(cubin.length);
      out.write(cubin);
      out.flush();
      byte[] body = buffer.toByteArray();
      Files.createDirectories(dir);
      temp = Files.createTempFile(dir, key, ".tmp");
      try (OutputStream file = Files.newOutputStream(temp)) {
        file.write(body);
        file.write(digest(body, body.length));
      }
      Files.move(temp, entry, StandardCopyOption.ATOMIC_MOVE,
          StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException | RuntimeException e) {
      if (warned.compareAndSet(false, true)) {
        LOG.warn("Tessera: compiled kernels cannot be kept in {} ({}); each process compiles"
            + " them again (logged once)", dir, e.getMessage());
      }
      if (temp != null) {
        try {
          Files.deleteIfExists(temp);
        } catch (IOException ignored) {
          // Nothing more to do: it is a temporary file in the cache's own folder.
        }
      }
    }
  }

  /** The SHA-256 of {@code bytes[0, length)}: an entry's checksum. */
  private static byte[] digest(byte[] bytes, int length) {
    MessageDigest sha = sha256();
    sha.update(bytes, 0, length);
    return sha.digest();
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no SHA-256", e);
    }
  }
}
