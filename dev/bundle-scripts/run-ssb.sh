#!/usr/bin/env bash
# bin/tessera ssb on this machine's GPU, with the bundle's runtime, class path and JVM flags:
#   run-ssb.sh [ssb options]          (run-ssb.sh --help lists them)
# Generated data is kept in work/ next to the app (reused while scale and seed match); the report
# goes to $reports/ssb (under $OUT when it is set) unless --out is given.
set -uo pipefail
source "$(dirname "$0")/env.sh"
out_given=0
for arg in "$@"; do
  case "$arg" in --out|--out=*) out_given=1 ;; esac
done
defaults=()
[ "$out_given" = 1 ] || defaults=(--out "$reports/ssb")
# Headless: the report's chart is drawn with AWT and a GPU host has no display. The heap holds
# Spark's cached tables with --input cached: TESSERA_SSB_HEAP raises it for large scale factors.
exec "$java" "${jvm_flags[@]}" -Xmx"${TESSERA_SSB_HEAP:-16g}" -Djava.awt.headless=true -Dtessera.work="$app/../work" \
  -cp "$classpath" dev.tessera.ssb.cli.TesseraCli ssb ${defaults[@]+"${defaults[@]}"} "$@"
