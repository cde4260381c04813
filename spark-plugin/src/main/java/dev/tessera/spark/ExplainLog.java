package dev.tessera.spark;

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
 * </pre>
 *
 * {@code *} marks what runs on the GPU, {@code !} what stays on the CPU. The plan rewrite builds
 * the list (parents before their children, as a pre-order walk gives them); this class only
 * formats and logs it, at WARN so that it shows under Spark's default log level.
 */
public final class ExplainLog {
  private static final Logger LOG = LoggerFactory.getLogger(ExplainLog.class);
  private static final String INDENT = "  ";

  private ExplainLog() {}

  /**
   * One line of the report.
   *
   * @param depth how deep in the tree: 0 for the root, children one more than their parent
   * @param description what the node is, e.g. "Exec &lt;FilterExec&gt;" or
   *     "Expression &lt;Add&gt; (a#0 + 1)"
   * @param onGpu whether it runs on the GPU
   * @param reasons why it does not (empty when it does); each names the setting or the
   *     unsupported feature so the user can act on it
   */
  public record Node(int depth, String description, boolean onGpu, List<String> reasons) {
    public Node {
      if (depth < 0) {
        throw new IllegalArgumentException("depth must be >= 0, was " + depth);
      }
      reasons = List.copyOf(reasons);
    }

    public static Node onGpu(int depth, String description) {
      return new Node(depth, description, true, List.of());
    }

    public static Node notOnGpu(int depth, String description, String... reasons) {
      return new Node(depth, description, false, List.of(reasons));
    }
  }

  /** The report's lines that {@code level} shows, joined by newlines; empty if none. */
  public static String render(List<Node> nodes, ExplainLevel level) {
    StringBuilder out = new StringBuilder();
    for (Node node : nodes) {
      if (!level.shows(node.onGpu())) {
        continue;
      }
      if (out.length() > 0) {
        out.append('\n');
      }
      out.append(INDENT.repeat(node.depth()))
          .append(node.onGpu() ? '*' : '!')
          .append(node.description());
      if (node.onGpu()) {
        out.append(" will run on GPU");
      } else if (node.reasons().isEmpty()) {
        out.append(" cannot run on GPU");
      } else {
        out.append(" cannot run on GPU because ").append(String.join("; ", node.reasons()));
      }
    }
    return out.toString();
  }

  /** Logs the report at WARN, as one message, when {@code level} shows any of its lines. */
  public static void log(List<Node> nodes, ExplainLevel level) {
    String report = render(nodes, level);
    if (!report.isEmpty()) {
      LOG.warn("Tessera plan (spark.tessera.explain={}):\n{}", level, report);
    }
  }
}
