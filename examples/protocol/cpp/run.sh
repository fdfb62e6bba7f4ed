#!/bin/sh
# Builds a C++ benchmark file (once per change) and runs it as warpt's
# adapter: bench.yaml's `command: sh ../../cpp/run.sh {file}`.
# The binary is cached under ${XDG_CACHE_HOME:-$HOME/.cache}/warpt/cpp,
# keyed by the source's path and modification time.
set -eu
src="$1"
here="$(cd "$(dirname "$0")" && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/warpt/cpp"
mkdir -p "$cache"
key="$(printf '%s %s' "$(cd "$(dirname "$src")" && pwd)/$(basename "$src")" \
    "$(stat -c %Y "$src" "$here/warpt_protocol.hpp" | tr '\n' ' ')" | cksum | cut -d' ' -f1)"
exe="$cache/$(basename "$src" .cpp)-$key"
if [ ! -x "$exe" ]; then
    ${CXX:-g++} -O2 -std=c++17 -march=native -I"$here" -o "$exe.tmp.$$" "$src" >&2
    mv "$exe.tmp.$$" "$exe"
fi
exec "$exe"
