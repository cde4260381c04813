package dev.tessera.gpu.codegen;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Marks tests that need the in-jar PTX compiler (no GPU): skipped, with the reason, where its
 * native library cannot be loaded (a platform jcuda-natives has no build for).
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@ExtendWith(RequiresPtxCompiler.Condition.class)
@interface RequiresPtxCompiler {
  /** Enables the test only where {@link PtxCompiler#available()}. */
  final class Condition implements ExecutionCondition {
    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
      return PtxCompiler.available()
          ? ConditionEvaluationResult.enabled("PTX compiler loaded")
          : ConditionEvaluationResult.disabled(PtxCompiler.unavailableReason());
    }
  }
}
