#!/usr/bin/env bash
# Builds the Java and Rust clients of tests/polyglot (`make polyglot`, part of `make test`):
# java/target/llmworker-polyglot.jar (+ java/target/lib/) with Maven, and
# rust/target/debug/llmworker-polyglot with Cargo (debug: the checks need no speed, and a
# release build takes longer). The first run fetches from Maven Central and crates.io; later
# runs skip Maven when nothing it reads changed, and Cargo rebuilds only what changed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
proto="$here/../../proto"

command -v java >/dev/null && command -v mvn >/dev/null \
  || { echo "Java 17+ and Maven are required for tests/polyglot/java (apt-get install -y maven)"; exit 1; }
command -v cargo >/dev/null \
  || { echo "Rust is required for tests/polyglot/rust (rustup: https://rustup.rs)"; exit 1; }

jar="$here/java/target/llmworker-polyglot.jar"
if [[ ! -f "$jar" ]] || [[ -n "$(find "$here/java/pom.xml" "$here/java/src" "$proto" -newer "$jar" -print -quit)" ]]; then
  # (Debian's Maven 3.8 prints colour resets even in batch mode: dropped.)
  (cd "$here/java" && mvn -q -B package 2>&1 | sed -e 's/\x1b\[[0-9;]*m//g')
  touch "$jar"
fi

(cd "$here/rust" && cargo build --locked --quiet)
