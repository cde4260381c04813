package dev.tessera.spark.rewrite;

import dev.tessera.spark.ExplainLog;
import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.exec.CpuFallbackExec;
import dev.tessera.spark.exec.SharedInputExec;
import dev.tessera.spark.exec.TesseraPipelineExec;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.QueryStageExec;
import org.apache.spark.sql.execution.exchange.Exchange;
import org.apache.spark.sql.execution.exchange.ReusedExchangeExec;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The per-task safety net (DESIGN.md §5): after the rewrite, every plan that replaced a Spark
 * node (tagged {@link GpuRewrite#REPLACES}) is wrapped in a {@link CpuFallbackExec}
 * keeping that Spark node's original subtree, which a task runs instead when its executor has no
 * usable runtime, or (in local mode too) when its GPU plan runs out of device memory before its
 * first row (DESIGN.md §2).
 *
 * <p>The two plans must read the very same inputs, so that a task computes one or the other over
 * the same partition: every path down from the GPU plan must reach a node of the Spark subtree
 * before any exchange, query stage or leaf of its own. Under adaptive execution (the default) the
 * plan the rule sees is one query stage, whose inputs are finished stages, so that holds at once.
 * Without it an exchange between two GPU segments is a copy the rewrite made of Spark's (its
 * subtree changed; tagged {@link GpuRewrite#COPIES}): the Spark subtree then reads
 * that copy in place of the original, so both sides read one shuffle (or broadcast), whose own
 * GPU segments are wrapped in turn (this goes bottom up).
 *
 * <p>A segment that still cannot keep Spark's plan either stays as it is (every live executor
 * has reported a usable runtime) or gives way to the Spark plan ({@code unconfirmed} says why,
 * and explain reports it).
 */
final class CpuFallback {
  private CpuFallback() {}

  /**
   * @param plan the rewritten plan
   * @param unconfirmed null when every live executor reported a usable runtime, else why a GPU
   *     segment without the safety net must stay on the CPU
   */
  static SparkPlan wrap(SparkPlan plan, String unconfirmed, TesseraConf conf) {
    List<ExplainLog.Node> putBack = new ArrayList<>();
    SparkPlan result = wrap(plan, false, unconfirmed, putBack);
    if (!putBack.isEmpty()) {
      ExplainLog.log(putBack, conf.explain());
    }
    return result;
  }

  /**
   * @param underGpu whether {@code node}'s parent is a GPU node: then it is not wrapped (the
   *     parent's segment, which holds it, is), so device batches flow from it to the parent
   */
  private static SparkPlan wrap(SparkPlan node, boolean underGpu, String unconfirmed,
      List<ExplainLog.Node> putBack) {
    if (node instanceof CpuFallbackExec) {
      return node;
    }
    List<SparkPlan> children = CollectionConverters.asJava(node.children());
    List<SparkPlan> wrapped = new ArrayList<>(children.size());
    boolean changed = false;
    for (SparkPlan child : children) {
      SparkPlan w = wrap(child, node instanceof TesseraPipelineExec, unconfirmed, putBack);
      changed |= w != child;
      wrapped.add(w);
    }
    SparkPlan current =
        changed ? node.withNewChildren(CollectionConverters.asScala(wrapped).toSeq()) : node;
    Option<SparkPlan> replaced = current.getTagValue(GpuRewrite.REPLACES);
    if (replaced.isEmpty() || underGpu) {
      return current;
    }
    SparkPlan spark = readingCopiedExchanges(replaced.get(), current);
    if (sharedInputs(current, spark) != null) {
      Set<SparkPlan> gpuNodes = Collections.newSetFromMap(new IdentityHashMap<>());
      collect(current, gpuNodes);
      return new CpuFallbackExec(current, substitute(spark, gpuNodes));
    }
    if (unconfirmed == null) {
      return current;
    }
    putBack.add(ExplainLog.Node.notOnGpu(0, "Exec <" + spark.nodeName() + ">",
        unconfirmed
        + ", and this GPU segment cannot fall back to the CPU per task (it does not read the"
        + " same inputs as Spark's plan): Spark's plan runs instead"));
    return spark;
  }

  /** {@code spark} reading, in place of each exchange {@code gpu} has a copy of, that copy. */
  static SparkPlan readingCopiedExchanges(SparkPlan spark, SparkPlan gpu) {
    Map<SparkPlan, SparkPlan> copies = new IdentityHashMap<>();
    collectCopies(gpu, copies);
    return copies.isEmpty() ? spark : readCopies(spark, copies);
  }

  private static void collectCopies(SparkPlan node, Map<SparkPlan, SparkPlan> into) {
    Option<SparkPlan> original = node.getTagValue(GpuRewrite.COPIES);
    if (node instanceof Exchange && original.isDefined()) {
      into.put(original.get(), node);
      return;
    }
    for (SparkPlan child : CollectionConverters.asJava(node.children())) {
      collectCopies(child, into);
    }
  }

  private static SparkPlan readCopies(SparkPlan node, Map<SparkPlan, SparkPlan> copies) {
    return replaceTopDown(node, copies::get);
  }

  /**
   * {@code node} with each exchange that is also in {@code gpuNodes} read through a
   * {@link SharedInputExec}. Query stages stay: they are leaves no rule copies, and the nodes over
   * them (AQEShuffleReadExec) want the stage itself as their child.
   */
  private static SparkPlan substitute(SparkPlan node, Set<SparkPlan> gpuNodes) {
    return replaceTopDown(node, n -> gpuNodes.contains(n)
        && (n instanceof Exchange || n instanceof ReusedExchangeExec) ? new SharedInputExec(n)
        : null);
  }

  /**
   * {@code node} with the first node down each path for which {@code replacement} gives a plan
   * (not null) replaced by it; the nodes above keep their identity where nothing below changed.
   */
  private static SparkPlan replaceTopDown(SparkPlan node,
      Function<SparkPlan, SparkPlan> replacement) {
    SparkPlan replaced = replacement.apply(node);
    if (replaced != null) {
      return replaced;
    }
    List<SparkPlan> children = CollectionConverters.asJava(node.children());
    List<SparkPlan> substituted = new ArrayList<>(children.size());
    boolean changed = false;
    for (SparkPlan child : children) {
      SparkPlan s = replaceTopDown(child, replacement);
      changed |= s != child;
      substituted.add(s);
    }
    return changed ? node.withNewChildren(CollectionConverters.asScala(substituted).toSeq())
        : node;
  }

  /**
   * The nodes of {@code spark}'s subtree where the paths down from {@code gpu} meet it, or null
   * when some path reaches an exchange, query stage or leaf of its own first.
   */
  static Set<SparkPlan> sharedInputs(SparkPlan gpu, SparkPlan spark) {
    Set<SparkPlan> nodes = Collections.newSetFromMap(new IdentityHashMap<>());
    collect(spark, nodes);
    Set<SparkPlan> met = Collections.newSetFromMap(new IdentityHashMap<>());
    return reaches(gpu, nodes, met) ? met : null;
  }

  private static void collect(SparkPlan node, Set<SparkPlan> into) {
    into.add(node);
    for (SparkPlan child : CollectionConverters.asJava(node.children())) {
      collect(child, into);
    }
  }

  private static boolean reaches(SparkPlan node, Set<SparkPlan> nodes, Set<SparkPlan> met) {
    if (nodes.contains(node)) {
      met.add(node);
      return true;
    }
    List<SparkPlan> children = CollectionConverters.asJava(node.children());
    if (children.isEmpty() || isExchange(node)) {
      return false;
    }
    for (SparkPlan child : children) {
      if (!reaches(child, nodes, met)) {
        return false;
      }
    }
    return true;
  }

  private static boolean isExchange(SparkPlan node) {
    return node instanceof Exchange || node instanceof QueryStageExec
        || node instanceof ReusedExchangeExec;
  }
}
