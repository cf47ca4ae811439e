#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: floods of HTTP/2 frames that carry no payload (empty DATA, PRIORITY, WINDOW_UPDATE, unknown
# types) or demand an answer (PING, SETTINGS) end their connection with GOAWAY ENHANCE_YOUR_CALM and
# the reason, logged with the peer, while a well-behaved client on another connection keeps being
# served throughout; the commander stays up.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER"
fe_start
spawn_bg "$EP_PYTHON" "$FE_DIR/frontend-h2-steady.py" "$EP_ADDR" "$EP_TMP/stop" --ready "$EP_TMP/ready" \
        >"$EP_TMP/steady.out" 2>&1
steady=$EP_LAST_PID
wait_until test -e "$EP_TMP/ready" || fail "the steady client got no answer: $(cat "$EP_TMP/steady.out")"

declare -A reason=([empty-data]="without payload" [priority]="without payload" [window-update]="without payload"
        [unknown]="without payload" [ping]="that demand an answer" [settings]="that demand an answer")
for kind in empty-data priority window-update unknown ping settings; do
        out=$("$EP_PYTHON" "$FE_DIR/h2-abuse.py" "$EP_ADDR" flood --kind "$kind" --count 20000 --wait 5 \
                --expect goaway=ENHANCE_YOUR_CALM --expect closed) || fail "$kind flood: $out"
        [[ $out == *"\"debug\": \"flood of frames ${reason[$kind]}\""* ]] || fail "$kind flood: GOAWAY reason: $out"
        note "$kind flood: $out"
done
wait_log 'flood of frames without payload'
commander_alive || fail "the commander died"

touch "$EP_TMP/stop"
wait "$steady" || fail "the steady client failed: $(cat "$EP_TMP/steady.out")"
note "the steady client on its own connection meanwhile: $(cat "$EP_TMP/steady.out")"
fe_stop
