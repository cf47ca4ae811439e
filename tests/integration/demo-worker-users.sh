#!/bin/bash
# SPDX-License-Identifier: MIT
# The demo worker keeps per-user state: /login answers "Elastic-Pool-User: U" and creates U's counter,
# /state increments it (1, 2, 3 over one keep-alive connection), /_monitor/state lists the users,
# /logout answers "Elastic-Pool-User: -" and forgets U, after which /state is 404.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/demo-worker-lib.sh"

demo_start --threads 2 --user-blob-size 4K

headers=$(curl -sf "${DEMO_CURL[@]}" -D - -o /dev/null 'http://demo/login?user=alice')
grep -qi '^Elastic-Pool-User: alice'$'\r' <<<"$headers" || fail "login lacks 'Elastic-Pool-User: alice': $headers"
curl -sf "${DEMO_CURL[@]}" -o /dev/null 'http://demo/login?user=bob%40example.com' || fail "login of bob@example.com"

# Three requests, one connection: curl reuses it for URLs given together (checked with its own stats).
out=$(curl -sf "${DEMO_CURL[@]}" -H 'X-Elastic-Pool-User: alice' -w '%{num_connects}\n' \
        http://demo/state http://demo/state http://demo/state)
note "$out"
counters=$(grep -o '"counter":[0-9]*' <<<"$out" | cut -d: -f2 | tr '\n' ' ')
[[ $counters == "1 2 3 " ]] || fail "counters over keep-alive were '$counters', expected '1 2 3 '"
[[ $(grep -c '^0$' <<<"$out") -eq 2 ]] || fail "curl opened more than one connection for the three requests"
grep -q '"user":"alice"' <<<"$out" || fail "state does not name the user"
grep -q '"worker":"-"' <<<"$out" || fail "state does not say the worker id '-' (no ELASTIC_POOL_WORKER)"
crc=$(grep -o '"blob_crc":[0-9]*' <<<"$out" | head -n1 | cut -d: -f2)
[[ $crc =~ ^[0-9]+$ && $crc -ne 0 ]] || fail "a 4 KiB blob should have a non-zero CRC, got '$crc'"

monitor=$(curl -sf "${DEMO_CURL[@]}" http://demo/_monitor/state)
note "$monitor"
"$EP_PYTHON" - "$monitor" <<'PY' || fail "/_monitor/state is not the expected JSON: $monitor"
import json, sys
m = json.loads(sys.argv[1])
users = {u["user"]: u for u in m["users"]}
assert set(users) == {"alice", "bob@example.com"}, users
assert users["alice"]["counter"] == 3 and users["bob@example.com"]["counter"] == 0, users
assert users["alice"]["blob_size"] == 4096, users
assert m["threads"] == 2 and m["worker"] == "-" and m["pid"] > 0 and m["connections"] >= 1, m
PY

# An unknown user, a missing header, an invalid name.
code=$(curl -s "${DEMO_CURL[@]}" -o /dev/null -w '%{http_code}' -H 'X-Elastic-Pool-User: carol' http://demo/state)
[[ $code == 404 ]] || fail "state of an unknown user answered $code, expected 404"
code=$(curl -s "${DEMO_CURL[@]}" -o /dev/null -w '%{http_code}' http://demo/state)
[[ $code == 404 ]] || fail "state without a user answered $code, expected 404"
for bad in 'a%20b' '' 'x%2Fy' "$(printf 'u%.0s' {1..129})"; do
        code=$(curl -s "${DEMO_CURL[@]}" -o /dev/null -w '%{http_code}' "http://demo/login?user=$bad")
        [[ $code == 400 ]] || fail "login of invalid user '$bad' answered $code, expected 400"
done
code=$(curl -s "${DEMO_CURL[@]}" -o /dev/null -w '%{http_code}' http://demo/login)
[[ $code == 400 ]] || fail "login without a user answered $code, expected 400"

headers=$(curl -sf "${DEMO_CURL[@]}" -D - -o /dev/null -H 'X-Elastic-Pool-User: alice' http://demo/logout)
grep -qi '^Elastic-Pool-User: -'$'\r' <<<"$headers" || fail "logout lacks 'Elastic-Pool-User: -': $headers"
code=$(curl -s "${DEMO_CURL[@]}" -o /dev/null -w '%{http_code}' -H 'X-Elastic-Pool-User: alice' http://demo/state)
[[ $code == 404 ]] || fail "state after logout answered $code, expected 404"
curl -sf "${DEMO_CURL[@]}" http://demo/_monitor/state | grep -q '"alice"' && fail "alice still listed after logout"

# A second login after logout starts over from 0.
curl -sf "${DEMO_CURL[@]}" -o /dev/null 'http://demo/login?user=alice'
out=$(curl -sf "${DEMO_CURL[@]}" -H 'X-Elastic-Pool-User: alice' http://demo/state)
grep -q '"counter":1,' <<<"$out" || fail "state after a fresh login: $out"
[[ $(grep -o '"blob_crc":[0-9]*' <<<"$out" | cut -d: -f2) == "$crc" ]] ||
        fail "the blob of a fresh login differs from the first one (it must be filled from the name alone)"

demo_stop
echo "OK"
