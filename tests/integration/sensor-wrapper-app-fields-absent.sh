#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: the sensor wrapper cannot know application quantities, so its Hello announces no capability and
# every report leaves users, pages, connections, active users, executor and backlog absent (never 0),
# while the kernel readings (memory from the first report, cpu from the second) are present.
. "$(dirname "$0")/lib.sh"

peer=$(bin ep-channel-peer)
wrapper=$(bin elastic-pool-sensor)
out=$EP_TMP/peer.log

timeout 60 "$peer" --count 3 --interval 200ms -- "$wrapper" -- sleep 600 \
        >"$out" 2>"$EP_TMP/peer-stderr.log" </dev/null || fail "ep-channel-peer exited with $?"
cat "$out"
grep -Eq '^hello .* caps=- ' "$out" || fail "the wrapper's Hello announces capabilities"
[[ $(grep -c '^report ' "$out") -eq 3 ]] || fail "want 3 reports"
while read -r line; do
        for field in users=- pages=- connections=- active=- executor=-/-/- backlog=-/-; do
                [[ " $line " == *" $field "* ]] || fail "report without $field: $line"
        done
        [[ $line != *" memory=- "* ]] || fail "memory absent: $line"
done < <(grep '^report ' "$out")
grep -q '^report seq=3 .* cpu=[0-9]' "$out" || fail "cpu absent on the third report"
note "ok"
