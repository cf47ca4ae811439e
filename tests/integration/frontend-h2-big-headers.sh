#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: HTTP/2 header blocks are bounded by what the front end counts itself: more than
# max_header_fields (100) fields or more than max_header_size (64 KiB) of decoded header bytes -> 431,
# never forwarded (the echo worker logs every head); a single field over 64 KiB ends the connection
# (nghttp2's HPACK limit: GOAWAY COMPRESSION_ERROR); exactly 100 fields pass; trailers over the limit
# reset the stream with ENHANCE_YOUR_CALM; the connection goes on serving.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$(test_worker)"
fe_start
abuse() {
        "$EP_PYTHON" "$FE_DIR/h2-abuse.py" "$EP_ADDR" headers --wait 1 "$@"
}
out=$(abuse --path /f101 --fields 101 --expect status=431) || fail "101 fields: $out"
note "101 fields: $out"
out=$(abuse --path /k70 --fields 10 --size 7000 --expect status=431) || fail "70 KiB of fields: $out"
note "10 fields of 7000 bytes: $out"
# one field over 64 KiB: nghttp2's HPACK decoder refuses it itself (its per-field limit), a connection error
out=$(abuse --path /k600 --fields 1 --size 70000 --expect goaway=COMPRESSION_ERROR --expect closed) ||
        fail "one 70 KB field: $out"
note "one field of 70000 bytes: $out"
[[ $(heads_count) == 0 ]] || fail "an over-limit head reached the worker: $(last_head)"
out=$(abuse --path /f100 --fields 100 --expect status=200) || fail "100 fields: $out"
note "100 fields: $out"
[[ $(heads_count) == 1 ]] || fail "the 100-field request did not reach the worker"

out=$(h2_request --method POST --path /trailers --body-bytes 10 --trailer-fields 101)
note "101 trailer fields: $out"
[[ $out == *'"reset": "ENHANCE_YOUR_CALM"'* ]] || fail "over-limit trailers did not reset the stream: $out"
out=$(h2_request --method POST --path /trailers-ok --body-bytes 10 --trailer-fields 3)
[[ $out == *'"status": 200'* ]] || fail "a request with 3 trailer fields: $out"
wait_log 'HTTP/2 client 127.0.0.1:[0-9]+.*(431|header)'
commander_alive || fail "the commander died"
fe_stop
