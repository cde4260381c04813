# Sourced by run-notebooks.sh and jupyter.sh: registers the "tessera-java" kernel (a JShell kernel
# from Maven Central) in the project-local Jupyter folder, with the class path of the plugin, the
# ssb module and Spark, and the JVM flags Spark needs on Java 17. Expects $here (bin/) and $tools.
nb_dir="$(cd "$here/.." && pwd)"
repo_dir="$(cd "$nb_dir/.." && pwd)"
target="$nb_dir/target"

first_jar() { # the first existing match of a glob, skipping original-*.jar
  local f
  for f in "$@"; do
    [[ -f "$f" && "$(basename "$f")" != original-* ]] && { echo "$f"; return; }
  done
}
plugin_jar="${TESSERA_PLUGIN_JAR:-$(first_jar "$repo_dir"/spark-plugin/target/tessera-spark-plugin-*.jar)}"
ssb_jar="${TESSERA_SSB_JAR:-$(first_jar "$repo_dir"/ssb/target/tessera-ssb-*.jar)}"
cp_file="${NOTEBOOKS_CLASSPATH_FILE:-$target/notebook-classpath.txt}"
kernel_jar="${NOTEBOOKS_KERNEL_JAR:-$target/kernel/rapaio-jupyter-kernel.jar}"
build_hint="build them first: ./mvnw -B package -DskipTests -pl notebooks -am"
for f in "$plugin_jar" "$ssb_jar" "$cp_file" "$kernel_jar"; do
  if [[ -z "$f" || ! -f "$f" ]]; then
    echo "notebooks: missing ${f:-the plugin or ssb jar}; $build_hint" >&2
    exit 1
  fi
done

classpath="$plugin_jar:$ssb_jar:$(cat "$cp_file")"
kernel_dir="$tools/share/jupyter/kernels/tessera-java"
mkdir -p "$kernel_dir"
mapfile -t jvm_flags < <(grep -v '^\s*\(#\|$\)' "$repo_dir/dev/spark-jvm-flags")
java_bin="${JAVA_HOME:+$JAVA_HOME/bin/}java"
/usr/bin/python3 - "$kernel_dir/kernel.json" "$java_bin" "$kernel_jar" "$classpath" "$nb_dir/log4j2.properties" \
  "$here/TesseraKernelLauncher.java" "${jvm_flags[@]}" <<'PY'
import json, sys
out, java_bin, kernel_jar, classpath, log4j_file, launcher, *flags = sys.argv[1:]
spec = {
    "argv": [java_bin, *flags, "-Djava.awt.headless=true", "-Xmx2g",
             "-Dlog4j.configurationFile=" + log4j_file,
             # Spark's jars before the kernel's, which bundles some of the same libraries.
             "-cp", classpath + ":" + kernel_jar,
             launcher, "{connection_file}"],
    "display_name": "Tessera (Java)",
    "language": "java",
    "interrupt_mode": "message",
    # JShell compiles against the class path; the classes themselves come from the JVM's class
    # path (the kernel's RJK_CLASSPATH would load a second copy of Spark). No timeout on a cell.
    "env": {"RJK_COMPILER_OPTIONS": "--class-path " + classpath + ":" + kernel_jar,
            "RJK_TIMEOUT_MILLIS": "-1"},
}
with open(out, "w") as f:
    json.dump(spec, f, indent=1)
PY
