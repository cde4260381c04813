package dev.tessera;

import dev.tessera.spark.SetCommandCheck;
import dev.tessera.spark.SqlConfRegistration;
import dev.tessera.spark.rewrite.PlanRewriter;
import dev.tessera.spark.rewrite.TesseraColumnarRule;
import org.apache.spark.sql.SparkSessionExtensions;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * Tessera's session extensions, the class named in {@code spark.sql.extensions}. The driver
 * plugin adds it there by itself; a session that cannot set {@code spark.plugins} may name it
 * directly ({@code spark.sql.extensions=dev.tessera.TesseraExtensions}), and then, in local mode,
 * the device runtime is opened in the driver JVM on the first query.
 *
 * <p>It only wires rules in; what they do is documented on each. Rule order: Spark applies
 * {@link TesseraColumnarRule}'s pre-transition rule to each physical plan (each query stage under
 * adaptive execution) before it inserts row/columnar transitions, so GPU nodes that the rewrite
 * puts in get Spark's transitions around them. {@link SqlConfRegistration} and
 * {@link SetCommandCheck} make a session refuse a bad {@code spark.tessera.*} setting when it is
 * set, rather than store it.
 */
public final class TesseraExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  /** Spark instantiates this class by name, through this constructor. */
  public TesseraExtensions() {}

  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    // Before the session's SQLConf is built, so that it checks Tessera's keys from the start.
    SqlConfRegistration.registerAll();
    extensions.injectCheckRule(session -> new SetCommandCheck());
    extensions.injectColumnar(session -> new TesseraColumnarRule(session, PlanRewriter.standard()));
    return BoxedUnit.UNIT;
  }
}
