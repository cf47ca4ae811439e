#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Intent: the sensor library's API as shipped stays in step with its header. Every function that
# elastic-pool/sensor.h declares is in the SYNOPSIS of elastic-pool-sensor(3) and in the Debian symbols
# file (packaging/debian/libelastic-pool-sensor0.symbols), and the symbols file names no function the
# header lacks; the built library exports exactly the header's functions. dpkg-gensymbols only warns
# about a function added without its symbols line; this fails.
. "$(dirname "$0")/../integration/lib.sh"
need_cmd nm
header=$EP_SOURCE_DIR/sensor/include/elastic-pool/sensor.h
page=$EP_SOURCE_DIR/docs/elastic-pool-sensor.3.md
symbols=$EP_SOURCE_DIR/packaging/debian/libelastic-pool-sensor0.symbols
library=$(find "$EP_BUILD_DIR/sensor" -maxdepth 1 -name 'libelastic-pool-sensor.so.*.*' | head -n1)

# declarations: a return type, then "ep_sensor_NAME(" at the start of a line
grep -oE '^[a-z_ *]+[ *](ep_sensor_[a-z_]+)\(' "$header" | grep -oE 'ep_sensor_[a-z_]+' | sort -u >"$EP_TMP/header"
[[ -s $EP_TMP/header ]] || fail "no ep_sensor_* declaration found in $header"
sed -n '/^## SYNOPSIS/,/^## /p' "$page" | grep -oE 'ep_sensor_[a-z_]+\(' | tr -d '(' | sort -u >"$EP_TMP/page"
grep -oE '^ ep_sensor_[a-z_]+@' "$symbols" | tr -d ' @' | sort -u >"$EP_TMP/symbols"

diff -u --label "sensor.h" --label "elastic-pool-sensor(3) SYNOPSIS" "$EP_TMP/header" "$EP_TMP/page" ||
        fail "elastic-pool-sensor(3) and sensor.h declare different functions (docs/elastic-pool-sensor.3.md)"
diff -u --label "sensor.h" --label "libelastic-pool-sensor0.symbols" "$EP_TMP/header" "$EP_TMP/symbols" ||
        fail "the symbols file and sensor.h name different functions: add each new one with the version that adds it"
if [[ -n $library ]]; then
        nm -D --defined-only "$library" | grep -oE '\bep_sensor_[a-z_]+' | sort -u >"$EP_TMP/exported"
        diff -u --label "sensor.h" --label "${library##*/} exports" "$EP_TMP/header" "$EP_TMP/exported" ||
                fail "the library exports other functions than sensor.h declares"
else
        note "the library is not built in $EP_BUILD_DIR: its exports are not compared"
fi
note "$(wc -l <"$EP_TMP/header") functions: header, man page, symbols file and library agree"
echo "PASS: sensor-api"
