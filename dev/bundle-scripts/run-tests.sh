#!/usr/bin/env bash
# Runs the project's test suites on this machine's GPU: the JUnit suites (both backends; the CUDA
# ones run here) and the Spark-level ScalaTest suites with spark.tessera.backend=cuda.
#   run-tests.sh [junit[:CLASS,...]|scalatest[:SUITE,...]]...     (default: junit scalatest)
# junit alone runs every JUnit class; junit:A,B only the classes named A and B (simple names, e.g.
# junit:CudaGeneratedHashAggregateDifferentialTest), and with JUNIT_METHODS set only their methods
# whose names match that regular expression. scalatest:X,Y runs the suites dev.tessera.it.X and Y.
# Each argument runs in its own JVM, one after another; run the script several times in the
# background to spread slow classes over JVMs.
set -uo pipefail
source "$(dirname "$0")/env.sh"
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(junit scalatest)
status=0

for suite in "${suites[@]}"; do
  kind=${suite%%:*}
  names=""
  [ "$kind" = "$suite" ] || names=${suite#*:}
  case "$kind" in
    junit)
      echo "== JUnit suites (gpu-operators)${names:+: $names}"
      select=()
      if [ -n "$names" ]; then
        select=(--include-classname "^(.*\\.)?(${names//,/|})\$")
        [ -z "${JUNIT_METHODS:-}" ] || select+=(--include-methodname ".*(${JUNIT_METHODS}).*")
      fi
      "$java" "${jvm_flags[@]}" -Xmx8g -jar "$app"/launcher/junit-platform-console-standalone-*.jar \
        execute --class-path "$classpath" \
        --scan-class-path "$(ls "$app"/jars/tessera-gpu-operators-*-tests.jar)" ${select[@]+"${select[@]}"} \
        --reports-dir "$reports/junit" --details=tree --disable-ansi-colors --disable-banner --fail-if-no-tests \
        || status=1
      ;;
    scalatest)
      echo "== ScalaTest suites (integration-tests, backend cuda)${names:+: $names}"
      select=()
      if [ -n "$names" ]; then
        for name in ${names//,/ }; do
          select+=(-s "dev.tessera.it.$name")
        done
      fi
      "$java" "${jvm_flags[@]}" -Xmx16g -Dtessera.test.backend=cuda -cp "$classpath" \
        org.scalatest.tools.Runner -R "$(ls "$app"/jars/tessera-integration-tests-*-tests.jar)" \
        ${select[@]+"${select[@]}"} -oDW -u "$reports/scalatest" || status=1
      ;;
    *) echo "run-tests.sh: unknown suite '$suite' (junit[:CLASS,...], scalatest[:SUITE,...])" >&2; exit 2 ;;
  esac
done
echo "== run-tests.sh: $([ $status = 0 ] && echo ALL PASSED || echo FAILURES, see above)"
exit $status
