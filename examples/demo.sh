#!/bin/sh
# demo.sh BUILD_DIR — `make demo`: build the bundled example, profile it with
# `hotspur record`, and print its top functions.
set -eu
build=${1:-build}
out="$build/demo"
mkdir -p "$out"
cc -O2 -g -o "$out/wordfreq" "$(dirname "$0")/wordfreq.c"
echo "\$ hotspur record -o $out/wordfreq.pb.gz -- $out/wordfreq"
"$build/bin/hotspur" record -o "$out/wordfreq.pb.gz" -- "$out/wordfreq"
echo
echo "\$ hotspur top -n 10 $out/wordfreq.pb.gz"
"$build/bin/hotspur" top -n 10 "$out/wordfreq.pb.gz"
