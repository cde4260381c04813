package dev.tessera.gpu.agg;

import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Comparison;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * How to merge the outputs of one {@link AggregateSpec} (keys, then one column per function) that
 * aggregated an input in several chunks, so that the merged groups equal aggregating the whole
 * input in one go. This is what lets a final aggregation that ran out of device memory emit its
 * groups early and merge them afterwards.
 *
 * <p>{@link #spec()} aggregates the chunks' output batches; when {@link #finisher()} is present,
 * running it over the merged groups (filter/project) gives the original output layout. Per kind:
 * <ul>
 *   <li>COUNT_ROWS and COUNT: the chunks' counts are summed (SUM to LONG, 0 when empty).
 *   <li>SUM: summed again with the same result type and zeroWhenEmpty; a chunk with no input
 *       gave NULL (or 0) and adds nothing. LONG results wrap as one sum would (the low 64 bits
 *       of a sum do not depend on where it was cut). DOUBLE results hold whole numbers, re-summed
 *       exactly; each chunk's total was already rounded once, so totals beyond 2^53 may round
 *       differently than one sum. Under ANSI a chunk whose own total overflows raises, as Spark's
 *       running sum would, even if the whole total would fit.
 *   <li>MIN and MAX: the same function over the chunks' results.
 *   <li>SUM_DECIMAL with zeroWhenEmpty: a NULL chunk result means that chunk's sum overflowed,
 *       and Spark's decimal overflow is sticky, so the merged result is NULL when any chunk's
 *       is. The merge sums the chunks' results and counts them (a hidden COUNT of the column and
 *       a hidden COUNT_ROWS, shared); the finisher makes the sum NULL where the two differ. With
 *       inputs of mixed signs a chunk may overflow while the whole total fits: the merged result
 *       is then NULL where one sum would not be.
 *   <li>SUM_DECIMAL without zeroWhenEmpty cannot be merged: NULL means either "no input" or
 *       "overflowed", and the merge cannot tell which; {@link #whyNot} says so.
 * </ul>
 * With no keys every chunk gives one row and the merge gives one row.
 */
public final class MergeSpec {
  private final AggregateSpec original;
  private final AggregateSpec spec;
  private final Program finisher;

  private MergeSpec(AggregateSpec original) {
    this.original = original;
    int keys = original.keyCount();
    List<ColumnType> inputs = new ArrayList<>(original.keyTypes());
    List<AggregateFunction> merging = new ArrayList<>();
    List<Integer> checkedSums = new ArrayList<>();
    for (int f = 0; f < original.functions().size(); f++) {
      AggregateFunction fn = original.functions().get(f);
      int column = keys + f;
      inputs.add(fn.resultType());
      merging.add(switch (fn.kind()) {
        case COUNT_ROWS, COUNT -> new AggregateFunction(Kind.SUM, column, ColumnType.LONG,
            true);
        case SUM, SUM_DECIMAL, MIN, MAX -> new AggregateFunction(fn.kind(), column,
            fn.resultType(), fn.zeroWhenEmpty());
      });
      if (fn.kind() == Kind.SUM_DECIMAL) {
        checkedSums.add(f);
      }
    }
    if (checkedSums.isEmpty()) {
      this.finisher = null;
    } else {
      // Hidden functions after the original ones: one COUNT per decimal sum, then COUNT_ROWS.
      for (int f : checkedSums) {
        merging.add(new AggregateFunction(Kind.COUNT, keys + f, ColumnType.LONG));
      }
      merging.add(new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG));
      this.finisher = finisher(original, checkedSums);
    }
    this.spec = new AggregateSpec(inputs, keys, merging, original.ansi());
  }

  /**
   * Why {@code spec}'s outputs cannot be merged, or empty when they can. The reason is meant for
   * an error message.
   */
  public static Optional<String> whyNot(AggregateSpec spec) {
    for (AggregateFunction f : spec.functions()) {
      if (f.kind() == Kind.SUM_DECIMAL && !f.zeroWhenEmpty()) {
        return Optional.of("its decimal sum " + f + " gives NULL both for no input and for an"
            + " overflow, so partial results cannot be merged");
      }
    }
    int outputs = spec.keyCount() + spec.functions().size();
    // The finisher holds every output in its own register, plus rows, a count and a NULL.
    if (needsFinisher(spec) && outputs + 3 > Program.MAX_REGISTERS) {
      return Optional.of("its " + outputs + " output columns are more than the "
          + Program.MAX_REGISTERS + "-register program that checks merged decimal sums can hold");
    }
    return Optional.empty();
  }

  /**
   * The merge of {@code spec}'s outputs.
   *
   * @throws IllegalArgumentException when they cannot be merged (see {@link #whyNot})
   */
  public static MergeSpec of(AggregateSpec spec) {
    Optional<String> why = whyNot(spec);
    if (why.isPresent()) {
      throw new IllegalArgumentException("cannot merge the groups of " + spec + ": " + why.get());
    }
    return new MergeSpec(spec);
  }

  /** The aggregation whose input batches are the original spec's outputs. */
  public AggregateSpec spec() {
    return spec;
  }

  /** The aggregation whose outputs are merged. */
  public AggregateSpec original() {
    return original;
  }

  /**
   * The filter/project over {@link #spec()}'s output that gives the original output layout
   * (dropping the hidden columns), or empty when that output already has it.
   */
  public Optional<Program> finisher() {
    return Optional.ofNullable(finisher);
  }

  private static boolean needsFinisher(AggregateSpec spec) {
    return spec.functions().stream().anyMatch(f -> f.kind() == Kind.SUM_DECIMAL);
  }

  /**
   * Loads every key and function column; a checked decimal sum becomes
   * {@code count == rows ? sum : NULL}.
   */
  private static Program finisher(AggregateSpec original, List<Integer> checkedSums) {
    int keys = original.keyCount();
    int functions = original.functions().size();
    List<ColumnType> mergedTypes = new ArrayList<>(original.keyTypes());
    original.functions().forEach(f -> mergedTypes.add(f.resultType()));
    checkedSums.forEach(f -> mergedTypes.add(ColumnType.LONG));
    mergedTypes.add(ColumnType.LONG);
    ProgramBuilder b = new ProgramBuilder(mergedTypes, original.ansi());
    List<Program.Output> outputs = new ArrayList<>();
    for (int k = 0; k < keys; k++) {
      outputs.add(new Program.Output(b.loadColumn(k), mergedTypes.get(k)));
    }
    int rowsColumn = mergedTypes.size() - 1;
    int rows = b.loadColumn(rowsColumn);
    int scratch = b.register();
    int nul = b.loadNull();
    for (int f = 0; f < functions; f++) {
      int value = b.loadColumn(keys + f);
      int checked = checkedSums.indexOf(f);
      if (checked >= 0) {
        // The count register is reused for each sum: registers are few (Program.MAX_REGISTERS).
        b.emit(Opcode.LOAD_COLUMN, scratch, keys + functions + checked, 0, 0);
        b.emit(Opcode.CMP_INT, scratch, scratch, rows, Comparison.EQ.code());
        b.emit(Opcode.SELECT, value, scratch, value, nul);
      }
      outputs.add(new Program.Output(value, original.functions().get(f).resultType()));
    }
    return b.build(-1, outputs);
  }

  @Override
  public String toString() {
    return "MergeSpec" + spec + (finisher == null ? "" : " + decimal overflow check");
  }
}
