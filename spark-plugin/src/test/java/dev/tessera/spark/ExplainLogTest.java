package dev.tessera.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.tessera.spark.ExplainLog.Node;
import java.util.List;
import org.junit.jupiter.api.Test;

class ExplainLogTest {
  private static final List<Node> PLAN = List.of(
      Node.onGpu(0, "Exec <ProjectExec>"),
      Node.onGpu(1, "Expression <Add> (a#0 + 1)"),
      Node.notOnGpu(1, "Expression <Year> year(d#1)",
          "spark.tessera.expression.Year.enabled is false", "TimestampNTZ is not supported"),
      Node.notOnGpu(1, "Exec <SortExec>"));

  @Test
  void allShowsEveryNodeIndentedByDepth() {
    assertEquals(String.join("\n",
            "*Exec <ProjectExec> will run on GPU",
            "  *Expression <Add> (a#0 + 1) will run on GPU",
            "  !Expression <Year> year(d#1) cannot run on GPU because"
                + " spark.tessera.expression.Year.enabled is false; TimestampNTZ is not supported",
            "  !Exec <SortExec> cannot run on GPU"),
        ExplainLog.render(PLAN, ExplainLevel.ALL));
  }

  @Test
  void notOnGpuShowsOnlyTheCpuNodes() {
    assertEquals(String.join("\n",
            "  !Expression <Year> year(d#1) cannot run on GPU because"
                + " spark.tessera.expression.Year.enabled is false; TimestampNTZ is not supported",
            "  !Exec <SortExec> cannot run on GPU"),
        ExplainLog.render(PLAN, ExplainLevel.NOT_ON_GPU));
  }

  @Test
  void noneShowsNothing() {
    assertEquals("", ExplainLog.render(PLAN, ExplainLevel.NONE));
  }
}
