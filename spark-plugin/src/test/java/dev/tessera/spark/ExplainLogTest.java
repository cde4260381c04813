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
      Node.notOnGpu(1, "Exec <SortExec>"),
      Node.byDesign(2, "Exec <ShuffleExchangeExec>", "Spark's shuffle moves the rows"),
      Node.notOnGpu(3, "Exec <ExpandExec>", "Tessera has no GPU version of ExpandExec"));

  @Test
  void allShowsEveryNodeIndentedByDepth() {
    assertEquals(String.join("\n",
            "*Exec <ProjectExec> will run on GPU",
            "  *Expression <Add> (a#0 + 1) will run on GPU",
            "  !Expression <Year> year(d#1) cannot run on GPU because"
                + " spark.tessera.expression.Year.enabled is false; TimestampNTZ is not supported",
            "  !Exec <SortExec> cannot run on GPU",
            "    @Exec <ShuffleExchangeExec> runs on the CPU by design: Spark's shuffle moves the"
                + " rows",
            "      !Exec <ExpandExec> cannot run on GPU because Tessera has no GPU version of"
                + " ExpandExec"),
        ExplainLog.render(PLAN, ExplainLevel.ALL));
  }

  @Test
  void notOnGpuShowsOnlyWhatCannotRunOnTheGpuIndentedUnderWhatItShows() {
    assertEquals(String.join("\n",
            "!Expression <Year> year(d#1) cannot run on GPU because"
                + " spark.tessera.expression.Year.enabled is false; TimestampNTZ is not supported",
            "!Exec <SortExec> cannot run on GPU",
            "  !Exec <ExpandExec> cannot run on GPU because Tessera has no GPU version of"
                + " ExpandExec"),
        ExplainLog.render(PLAN, ExplainLevel.NOT_ON_GPU));
  }

  @Test
  void noneShowsNothing() {
    assertEquals("", ExplainLog.render(PLAN, ExplainLevel.NONE));
  }
}
