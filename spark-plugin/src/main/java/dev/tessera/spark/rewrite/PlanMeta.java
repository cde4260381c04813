package dev.tessera.spark.rewrite;

import dev.tessera.spark.ExplainLog;
import dev.tessera.spark.expr.ExpressionBlocker;
import dev.tessera.spark.expr.Unsupported;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.exchange.Exchange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.jdk.javaapi.CollectionConverters;

/**
 * One node of the tree that mirrors a Spark plan while it is rewritten (spark-rapids'
 * {@code RapidsMeta}): the Spark node, its rule (null when Tessera has none), every reason it
 * cannot run on the GPU, and what explain says about it. The rewrite tags the whole tree (children
 * first, then the node's enable switch, its rule's check and a standalone trial of its
 * conversion), then converts bottom up the nodes no reason was recorded for.
 */
public final class PlanMeta {
  private static final Logger LOG = LoggerFactory.getLogger(PlanMeta.class);

  private final SparkPlan node;
  private final ExecRule<?> rule;
  private final List<PlanMeta> children;
  private final Set<String> reasons = new LinkedHashSet<>();
  private final List<ExpressionBlocker> blockers = new ArrayList<>();
  private List<String> notes = List.of();
  private List<Converter.ByDesign> byDesign = List.of();
  private boolean onGpu;

  PlanMeta(SparkPlan node, GpuRules rules) {
    this.node = node;
    this.rule = rules.ruleFor(node);
    this.children = CollectionConverters.asJava(node.children()).stream()
        .map(child -> new PlanMeta(child, rules)).toList();
  }

  public SparkPlan node() {
    return node;
  }

  /** Records a reason the node cannot run on the GPU: a sentence the user understands. */
  public void cannotRunOnGpu(String reason) {
    reasons.add(reason);
  }

  /** Records the expressions of the node that cannot run on the GPU. */
  public void cannotRunOnGpu(List<ExpressionBlocker> expressions) {
    blockers.addAll(expressions);
  }

  /** Whether a reason has been recorded. */
  boolean blocked() {
    return !reasons.isEmpty() || !blockers.isEmpty();
  }

  /** Every reason, expressions' included, as stored on the Spark node. */
  Set<String> allReasons() {
    Set<String> all = new LinkedHashSet<>(reasons);
    blockers.forEach(b -> all.add(b.toString()));
    return all;
  }

  void tag(RewriteContext context) {
    children.forEach(child -> child.tag(context));
    if (rule == null) {
      return;
    }
    if (!context.conf().isExecEnabled(rule.name())) {
      cannotRunOnGpu(rule.name() + " is disabled by " + rule.enableKey());
    }
    try {
      rule.checkNode(node, this, context);
      if (!blocked()) {
        rule.convertNode(node, new Converter(context)); // standalone, over the CPU children
      }
    } catch (Unsupported e) {
      cannotRunOnGpu(e.getMessage());
    } catch (RuntimeException e) {
      cannotRunOnGpu(bug(e));
    }
    if (blocked()) {
      node.setTagValue(GpuRewrite.CPU_REASONS, List.copyOf(allReasons()));
    }
  }

  /** The plan with every node that may run on the GPU converted, bottom up. */
  SparkPlan convert(RewriteContext context) {
    List<SparkPlan> original = CollectionConverters.asJava(node.children());
    List<SparkPlan> converted = new ArrayList<>(children.size());
    boolean changed = false;
    for (int i = 0; i < children.size(); i++) {
      SparkPlan c = children.get(i).convert(context);
      changed |= c != original.get(i);
      converted.add(c);
    }
    SparkPlan current = changed
        ? node.withNewChildren(CollectionConverters.asScala(converted).toSeq()) : node;
    SparkPlan result = current;
    if (rule != null && !blocked()) {
      Converter converter = new Converter(context);
      try {
        result = rule.convertNode(current, converter);
        List<String> all = new ArrayList<>(converter.notes());
        String kernel = KernelNote.of(result, context.conf());
        if (kernel != null) {
          all.add(kernel);
        }
        notes = List.copyOf(all);
        byDesign = List.copyOf(converter.byDesign());
        onGpu = true;
      } catch (Unsupported e) {
        cannotRunOnGpu(e.getMessage());
      } catch (RuntimeException e) {
        cannotRunOnGpu(bug(e));
      }
      if (!onGpu) {
        current.setTagValue(GpuRewrite.CPU_REASONS, List.copyOf(allReasons()));
      }
    }
    if (result != current) {
      result.setTagValue(GpuRewrite.REPLACES, node);
    } else if (changed && current instanceof Exchange) {
      current.setTagValue(GpuRewrite.COPIES, node);
    }
    return result;
  }

  /** A conversion that threw: a Tessera bug, which keeps the node on the CPU, never fails it. */
  private String bug(RuntimeException e) {
    LOG.warn("Tessera bug: converting {} to the GPU threw; it stays on the CPU", node.nodeName(),
        e);
    return "converting it to the GPU failed, a Tessera bug (please report it): " + e;
  }

  /** Explain's lines for this node and those below it, in pre-order. */
  void report(int depth, GpuRules rules, List<ExplainLog.Node> out) {
    if (rules.isWrapper(node)) {
      children.forEach(child -> child.report(depth, rules, out));
      return;
    }
    String description = "Exec <" + node.nodeName() + ">";
    String byDesignWhy = rules.byDesign(node);
    if (onGpu || rules.isGpuNode(node)) {
      out.add(ExplainLog.Node.onGpu(depth, description, notes));
      for (Converter.ByDesign cpu : byDesign) {
        out.add(ExplainLog.Node.byDesign(depth + 1,
            "Exec <" + cpu.node().nodeName() + ">", cpu.why()));
      }
    } else if (rule == null && byDesignWhy != null) {
      out.add(ExplainLog.Node.byDesign(depth, description, byDesignWhy));
    } else {
      List<String> why = new ArrayList<>(reasons);
      if (rule == null) {
        why.add("Tessera has no GPU version of " + node.getClass().getSimpleName());
      }
      if (!blockers.isEmpty()) {
        why.add("some of its expressions cannot run on the GPU (listed below it)");
      }
      out.add(ExplainLog.Node.notOnGpu(depth, description, why.toArray(String[]::new)));
      for (ExpressionBlocker b : blockers) {
        out.add(ExplainLog.Node.notOnGpu(depth + 1,
            "Expression <" + b.name() + "> " + b.sql(), b.reason()));
      }
    }
    children.forEach(child -> child.report(depth + 1, rules, out));
  }
}
