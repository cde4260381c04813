package dev.tessera.gpu.codegen;

import dev.tessera.gpu.agg.AggregateSpec;

/**
 * How a generated aggregate kernel reads the words of its plan ({@link AggregatePlan}): the table's
 * mask and arrays, the keys' and functions' arrays, the direct map. None of them changes during a
 * launch, so where the plan fits the parameter space, the host passes a copy of it by value as the
 * kernel's last parameter ({@link #byValue}), and the kernel reads it through the constant cache:
 * an operand of the instruction that uses it, where a load from the plan in global memory is an L1
 * round trip (a profile at 1,000 groups had 13% of the stalls on the functions' array pointers).
 * Wider plans are read from global memory, as the interpreter kernel reads them. The counters the
 * kernel updates (groups, heap bytes) are not in the plan, only their addresses.
 */
final class PlanWords {
  /** The parameter's name; the host passes it after the interpreter kernel's parameters. */
  static final String PARAM = "plan_words";
  /**
   * Bytes of a kernel's parameters that PTX 8.0 allows, less what the other parameters take (at
   * most 8 bytes each).
   */
  private static final int MAX_BYTES =
      ProgramWords.PARAM_SPACE_BYTES - AggregateUpdateGenerator.PARAMETER_BYTES;

  private final PtxBuilder b;
  private final ProgramEmitter body;
  private final boolean byValue;

  PlanWords(PtxBuilder b, ProgramEmitter body, AggregateSpec spec) {
    this.b = b;
    this.body = body;
    this.byValue = byValue(spec);
  }

  /** The plan's bytes: the header, then a column of words per key and per function. */
  static int bytes(AggregateSpec spec) {
    return 8 * (AggregatePlan.HEADER_WORDS
        + AggregatePlan.COLUMN_WORDS * (spec.keyCount() + spec.functions().size()));
  }

  /** Whether the kernel of {@code spec} takes a copy of its plan as its last parameter. */
  static boolean byValue(AggregateSpec spec) {
    return bytes(spec) <= MAX_BYTES;
  }

  /**
   * The declaration of the copy, to follow the kernel's other parameters, or "" where the plan of
   * {@code spec} is read from memory.
   */
  static String parameter(ProgramEmitter body, AggregateSpec spec) {
    return byValue(spec)
        ? ",\n\t.param .align 8 .b8 " + body.param(PARAM) + "[" + bytes(spec) + "]" : "";
  }

  /** A new .b64 holding the plan's word at byte {@code offset}. */
  String word(int offset) {
    String r = b.b64();
    if (byValue) {
      b.op("ld.param.u64 %s, [%s+%d]", r, body.param(PARAM), offset);
    } else {
      b.op("ld.global.nc.u64 %s, [%s+%d]", r, body.global(body.loadParam("u64", "plan")),
          offset);
    }
    return r;
  }

  /** The global address held by the plan's word at byte {@code offset}. */
  String address(int offset) {
    return body.global(word(offset));
  }

  /**
   * The global address of element {@code index} (.b64) of the array of {@code width}-byte
   * elements whose address is the plan's word at byte {@code offset}.
   */
  String element(int offset, String index, int width) {
    String base = address(offset);
    String at = b.b64();
    if (width == 1) {
      b.op("add.s64 %s, %s, %s", at, index, base);
    } else {
      b.op("mad.lo.s64 %s, %s, %d, %s", at, index, width, base);
    }
    return at;
  }
}
