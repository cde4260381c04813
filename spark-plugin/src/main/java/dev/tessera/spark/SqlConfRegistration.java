package dev.tessera.spark;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.internal.SQLConf$;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.runtime.AbstractFunction1;

/**
 * Registers every Tessera setting with Spark's SQLConf, so that a session refuses a bad value
 * when it is set ({@code SET key=value} in SQL, {@code spark.conf.set}) instead of storing it.
 * A stored bad value would fail every later query until someone removed it; refusing it keeps the
 * session on its previous, valid value.
 *
 * <p>Why SQLConf: {@code SQLConf.setConfString}, which both paths end in, checks the value of a
 * registered key (its converter must accept it) before it stores anything, and it is the only
 * such hook Spark has. Spark registers a key through {@code SQLConf.buildConf}'s ConfigBuilder,
 * which Scala keeps to Spark's own packages but Java can call; Tessera is built against one Spark
 * version. Keys Spark does not know it stores unchecked, so an unknown {@code spark.tessera.*} key
 * is refused by {@link SetCommandCheck} in SQL, and otherwise caught when a query is planned.
 */
public final class SqlConfRegistration {
  private static final Logger LOG = LoggerFactory.getLogger(SqlConfRegistration.class);

  /** The keys registered (or found registered) in this class loader; Spark refuses a key twice. */
  private static final Set<String> REGISTERED = ConcurrentHashMap.newKeySet();

  private SqlConfRegistration() {}

  /** Registers the settings not registered yet; safe to call for every new session. */
  public static void registerAll() {
    for (ConfEntry<?> entry : TesseraConf.entries()) {
      if (!REGISTERED.contains(entry.key())) {
        register(entry);
      }
    }
  }

  private static synchronized void register(ConfEntry<?> entry) {
    if (!REGISTERED.add(entry.key()) || SQLConf$.MODULE$.containsConfigKey(entry.key())) {
      return; // done by an earlier call, or by a copy of Tessera in another class loader
    }
    try {
      SQLConf.buildConf(entry.key())
          .doc(entry.doc())
          .stringConf()
          .transform(new CheckedBy(entry))
          .createWithDefaultString(entry.defaultText());
    } catch (RuntimeException | LinkageError e) {
      // Not fatal: the value is still checked when a query is planned, as without this class.
      LOG.warn("Tessera: could not register {} with Spark's SQLConf, so a bad value set on a"
          + " session is caught only by the next query rather than when it is set", entry.key(),
          e);
    }
  }

  /** Spark's value converter: parses the text as the setting does, keeps the text as it is. */
  private static final class CheckedBy extends AbstractFunction1<String, String> {
    private final ConfEntry<?> entry;

    CheckedBy(ConfEntry<?> entry) {
      this.entry = entry;
    }

    @Override
    public String apply(String text) {
      entry.parse(text); // throws IllegalArgumentException naming the key and accepted values
      return text;
    }
  }
}
