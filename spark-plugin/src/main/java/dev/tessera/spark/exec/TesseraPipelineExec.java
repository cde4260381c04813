package dev.tessera.spark.exec;

import dev.tessera.spark.expr.PipelineStep;
import dev.tessera.spark.expr.JoinProbe;
import dev.tessera.spark.expr.Pipeline;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.plans.physical.Partitioning;
import org.apache.spark.sql.execution.SparkPlan;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A GPU node that runs a fused {@link Pipeline} over the device batches of its input: filters,
 * projections and the probes of broadcast hash joins, whose build sides (Spark's broadcasts, one
 * per probe, in the order of the probes' tables) are the node's other children. It outputs device
 * batches.
 */
public abstract class TesseraPipelineExec extends TesseraExec {
  private static final long serialVersionUID = 1L;
  private final SparkPlan input;
  private final List<SparkPlan> builds;
  private final Pipeline pipeline;

  protected TesseraPipelineExec(SparkPlan input, List<SparkPlan> builds, Pipeline pipeline) {
    if (builds.size() != probes(pipeline.fused().steps()).size()) {
      throw new IllegalArgumentException(builds.size() + " build sides for "
          + probes(pipeline.fused().steps()).size() + " probes");
    }
    this.input = input;
    this.builds = List.copyOf(builds);
    this.pipeline = pipeline;
  }

  /** The node below whose device batches the pipeline reads. */
  public SparkPlan child() {
    return input;
  }

  /** The broadcast build sides, by table. */
  public List<SparkPlan> builds() {
    return builds;
  }

  public Pipeline pipeline() {
    return pipeline;
  }

  /**
   * Whether the pipeline reads the device batches of the GPU node below as they are (every
   * column, in order), rather than an upload of the columns it reads.
   */
  public boolean readsDeviceBatches() {
    return pipeline.options().readAllInputs();
  }

  /** The input columns an upload for the pipeline must copy, in the pipeline's input order. */
  public int[] uploadOrdinals() {
    return pipeline.inputOrdinals().stream().mapToInt(Integer::intValue).toArray();
  }

  /** The Spark steps the pipeline evaluates, bottom first. */
  public List<PipelineStep> steps() {
    return pipeline.fused().steps();
  }

  /** The joins the pipeline probes, by table. */
  public List<JoinProbe> probes() {
    return probes(steps());
  }

  static List<JoinProbe> probes(List<PipelineStep> steps) {
    return steps.stream().filter(PipelineStep::isProbe).map(PipelineStep::probe)
        .toList();
  }

  /** This node with other children (input first, then the build sides). */
  protected abstract SparkPlan copy(SparkPlan newInput, List<SparkPlan> newBuilds);

  /** The constructor arguments after the input, the build sides and the pipeline, in order. */
  protected abstract List<Object> arguments();

  @Override
  protected final List<Object> members() {
    List<Object> members = new ArrayList<>(List.of(input, builds, pipeline));
    members.addAll(arguments());
    return members;
  }

  @Override
  public Seq<SparkPlan> children() {
    List<SparkPlan> all = new ArrayList<>();
    all.add(input);
    all.addAll(builds);
    return CollectionConverters.asScala(all).toList();
  }

  @Override
  public SparkPlan withNewChildrenInternal(IndexedSeq<SparkPlan> children) {
    List<SparkPlan> all = CollectionConverters.asJava(children);
    return copy(all.get(0), all.subList(1, all.size()));
  }

  @Override
  public Partitioning outputPartitioning() {
    return OutputPartitioning.through(input.outputPartitioning(), steps(),
        CollectionConverters.asJava(output()));
  }

  @Override
  public boolean supportsColumnar() {
    return true;
  }

  @Override
  public RDD<InternalRow> doExecute() {
    throw new IllegalStateException(nodeName() + " produces device batches only");
  }
}
