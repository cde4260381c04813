#!/usr/bin/env bash
# Runs the project's test suites on this machine's GPU: the JUnit suites (both backends; the CUDA
# ones run here) and the Spark-level ScalaTest suites with spark.tessera.backend=cuda.
#   run-tests.sh [junit|scalatest]...     (default: both)
set -uo pipefail
source "$(dirname "$0")/env.sh"
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(junit scalatest)
status=0

for suite in "${suites[@]}"; do
  case "$suite" in
    junit)
      echo "== JUnit suites (gpu-operators)"
      "$java" "${jvm_flags[@]}" -Xmx8g -jar "$app"/launcher/junit-platform-console-standalone-*.jar \
        execute --class-path "$classpath" \
        --scan-class-path "$(ls "$app"/jars/tessera-gpu-operators-*-tests.jar)" \
        --reports-dir "$reports/junit" --details=tree --disable-ansi-colors --disable-banner --fail-if-no-tests \
        || status=1
      ;;
    scalatest)
      echo "== ScalaTest suites (integration-tests, backend cuda)"
      "$java" "${jvm_flags[@]}" -Xmx16g -Dtessera.test.backend=cuda -cp "$classpath" \
        org.scalatest.tools.Runner -R "$(ls "$app"/jars/tessera-integration-tests-*-tests.jar)" \
        -oDW -u "$reports/scalatest" || status=1
      ;;
    *) echo "run-tests.sh: unknown suite '$suite' (junit, scalatest)" >&2; exit 2 ;;
  esac
done
echo "== run-tests.sh: $([ $status = 0 ] && echo ALL PASSED || echo FAILURES, see above)"
exit $status
