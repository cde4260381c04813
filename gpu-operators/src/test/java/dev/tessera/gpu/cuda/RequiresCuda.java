package dev.tessera.gpu.cuda;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Marks tests that need a CUDA device. Where there is none they are reported as skipped, with the
 * reason (no driver library, no device, ...), in the test report and once on standard error.
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Tag("cuda")
@ExtendWith(RequiresCuda.Condition.class)
public @interface RequiresCuda {
  /** Enables the test only where {@link CudaAvailability} says CUDA can be used. */
  final class Condition implements ExecutionCondition {
    private static volatile boolean announced;

    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
      CudaAvailability cuda = CudaAvailability.get();
      if (cuda.isAvailable()) {
        return ConditionEvaluationResult.enabled("CUDA device present");
      }
      String reason = "no CUDA device: " + cuda.unavailableReason();
      if (!announced) {
        announced = true;
        System.err.println("[tessera] CUDA backend tests are SKIPPED: " + reason);
      }
      return ConditionEvaluationResult.disabled(reason);
    }
  }
}
