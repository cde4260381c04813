package dev.tessera.spark;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes the plan report {@code spark.tessera.explain} asks for: an indented tree, one line per
 * node or expression, in the form spark-rapids users know:
 *
 * <pre>
 * *Exec &lt;ProjectExec&gt; will run on GPU
 *   *Expression &lt;Add&gt; (a#0 + 1) will run on GPU
 *   !Expression &lt;Year&gt; year(d#1) cannot run on GPU because spark.tessera.expression.Year.enabled is false
 *   &#64;Exec &lt;ShuffleExchangeExec&gt; runs on the CPU by design: ...
 * </pre>
 *
 * {@code *} marks what runs on the GPU, {@code @} what stays on the CPU by design (a shuffle, a
 * scan, the projection that finishes a GPU aggregate), {@code !} what stays on the CPU because it
 * cannot run on the GPU, with every reason. The plan rewrite builds the list (parents before their
 * children, as a pre-order walk gives them); this class only formats and logs it, at WARN so that
 * it shows under Spark's default log level. A level that leaves a node out indents the lines
 * below it under the nearest node it shows.
 */
public final class ExplainLog {
  private static final Logger LOG = LoggerFactory.getLogger(ExplainLog.class);
  private static final String INDENT = "  ";

  private ExplainLog() {}

  /** Where a node runs. */
  public enum Kind {
    /** On the GPU. */
    ON_GPU,
    /** On the CPU on purpose. */
    BY_DESIGN,
    /** On the CPU because it cannot run on the GPU. */
    NOT_ON_GPU
  }

  /**
   * One line of the report.
   *
   * @param depth how deep in the tree: 0 for the root, children one more than their parent
   * @param description what the node is, e.g. "Exec &lt;FilterExec&gt;" or
   *     "Expression &lt;Add&gt; (a#0 + 1)"
   * @param kind where it runs
   * @param reasons why it does not run on the GPU (NOT_ON_GPU; each names the setting or the
   *     unsupported feature so the user can act on it), why it stays on the CPU (BY_DESIGN), or
   *     notes on how it runs (ON_GPU, e.g. a fusion that failed)
   */
  public record Node(int depth, String description, Kind kind, List<String> reasons) {
    public Node {
      if (depth < 0) {
        throw new IllegalArgumentException("depth must be >= 0, was " + depth);
      }
      reasons = List.copyOf(reasons);
    }

    public static Node onGpu(int depth, String description) {
      return onGpu(depth, description, List.of());
    }

    public static Node onGpu(int depth, String description, List<String> notes) {
      return new Node(depth, description, Kind.ON_GPU, notes);
    }

    public static Node byDesign(int depth, String description, String why) {
      return new Node(depth, description, Kind.BY_DESIGN, List.of(why));
    }

    public static Node notOnGpu(int depth, String description, String... reasons) {
      return new Node(depth, description, Kind.NOT_ON_GPU, List.of(reasons));
    }

    public boolean onGpu() {
      return kind == Kind.ON_GPU;
    }

    private String line() {
      return switch (kind) {
        case ON_GPU -> "*" + description + " will run on GPU"
            + (reasons.isEmpty() ? "" : ", " + String.join("; ", reasons));
        case BY_DESIGN -> "@" + description + " runs on the CPU by design: "
            + String.join("; ", reasons);
        case NOT_ON_GPU -> "!" + description + " cannot run on GPU"
            + (reasons.isEmpty() ? "" : " because " + String.join("; ", reasons));
      };
    }
  }

  /** The report's lines that {@code level} shows, joined by newlines; empty if none. */
  public static String render(List<Node> nodes, ExplainLevel level) {
    StringBuilder out = new StringBuilder();
    // The depths of the nodes above the current one, and whether each was shown.
    Deque<int[]> above = new ArrayDeque<>();
    for (Node node : nodes) {
      while (!above.isEmpty() && above.peek()[0] >= node.depth()) {
        above.pop();
      }
      boolean shown = level.shows(node.kind());
      if (shown) {
        long indent = above.stream().filter(a -> a[1] == 1).count();
        if (out.length() > 0) {
          out.append('\n');
        }
        out.append(INDENT.repeat((int) indent)).append(node.line());
      }
      above.push(new int[] {node.depth(), shown ? 1 : 0});
    }
    return out.toString();
  }

  /** Logs the report at WARN, as one message, when {@code level} shows any of its lines. */
  public static void log(List<Node> nodes, ExplainLevel level) {
    log(nodes, level, null);
  }

  /**
   * As {@link #log(List, ExplainLevel)}, the header naming the part of the query the report is
   * of ({@code scope}, e.g. one query stage of adaptive execution), when not null.
   */
  public static void log(List<Node> nodes, ExplainLevel level, String scope) {
    String report = render(nodes, level);
    if (!report.isEmpty()) {
      LOG.warn("Tessera plan (spark.tessera.explain={}){}:\n{}", level,
          scope == null ? "" : " for " + scope, report);
    }
  }
}
