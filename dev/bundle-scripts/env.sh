# Sourced by the run-*.sh scripts: the bundle's Java, class path and the JVM flags Spark 4 needs.
app=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
runtime="$app/../$(cat "$app/RUNTIME")"
if [ ! -f "$runtime/READY" ]; then
  echo "The Java runtime of this bundle ($runtime) is not unpacked: run dev/gpu-unpack first." >&2
  exit 3
fi
java="$runtime/java/bin/java"
classpath=$(ls "$app"/jars/*.jar "$runtime"/jars/*.jar | tr '\n' ':')
# TESSERA_CLASSES: jars or folders put before the bundle's own (another build's gpu-operators
# classes from dev/gpu-variants, to compare builds on one card).
classpath="${TESSERA_CLASSES:+$TESSERA_CLASSES:}$classpath"
mapfile -t jvm_flags < "$app/spark-jvm-flags"   # the flags Spark's launcher passes on Java 17
# Reports go to $OUT when the caller set it (the device tool does), else next to the app.
reports=${OUT:-$app/reports}
mkdir -p "$reports"
