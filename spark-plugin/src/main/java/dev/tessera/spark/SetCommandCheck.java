package dev.tessera.spark;

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.command.SetCommand;
import scala.Option;
import scala.Tuple2;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * A check rule (run on every analyzed plan, before a command in it runs) that refuses
 * {@code SET spark.tessera.key=value} when the key is not a Tessera setting or the value is not
 * accepted, so nothing is stored. {@link SqlConfRegistration} already makes Spark refuse a bad
 * value of a known key; this rule is what refuses an unknown key, which Spark would store.
 */
public final class SetCommandCheck extends AbstractFunction1<LogicalPlan, BoxedUnit> {
  @Override
  public BoxedUnit apply(LogicalPlan plan) {
    if (plan instanceof SetCommand set && set.kv().isDefined()) {
      Tuple2<String, Option<String>> keyValue = set.kv().get();
      String key = keyValue._1();
      Option<String> value = keyValue._2();
      // SET key (no value) only shows the setting, whatever the key.
      if (key != null && key.startsWith(TesseraConf.PREFIX) && value.isDefined()) {
        TesseraConf.validate(key, value.get()); // throws, naming the key
      }
    }
    return BoxedUnit.UNIT;
  }
}
