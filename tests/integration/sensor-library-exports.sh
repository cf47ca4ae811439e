#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: libelastic-pool-sensor.so carries a versioned SONAME and exports exactly the ep_sensor_* API of
# sensor.h: every function the header declares, and nothing of the code linked in statically.
. "$(dirname "$0")/lib.sh"

need_cmd nm readelf
lib=$EP_BUILD_DIR/sensor/libelastic-pool-sensor.so
header=$EP_SOURCE_DIR/sensor/include/elastic-pool/sensor.h
[[ -e $lib ]] || fail "$lib not built"

soname=$(readelf -d "$lib" | sed -nE 's/.*SONAME.*\[(.*)\].*/\1/p')
[[ $soname =~ ^libelastic-pool-sensor\.so\.[0-9]+$ ]] || fail "SONAME '$soname' is not versioned"

nm -D --defined-only "$lib" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort -u >"$EP_TMP/exported"
grep -oE '\bep_sensor_[a-z_]+\(' "$header" | tr -d '(' | sort -u >"$EP_TMP/declared"
extra=$(comm -23 "$EP_TMP/exported" "$EP_TMP/declared")
missing=$(comm -13 "$EP_TMP/exported" "$EP_TMP/declared")
[[ -z $extra ]] || fail "exported beyond the API: $extra"
[[ -z $missing ]] || fail "declared but not exported: $missing"
note "ok: $(wc -l <"$EP_TMP/exported") symbols, SONAME $soname"
