# SPDX-License-Identifier: MIT
# Helpers of the front end's end-to-end tests (tests/integration/frontend-*.sh): a real commander with
# its listener on a free port, real workers (the demo worker, or frontend-worker.py under the sensor
# wrapper), real clients (curl, nghttp, h2load, python). Source after lib.sh and commander-lib.sh:
#   . "$(dirname "$0")/lib.sh"; . "$(dirname "$0")/commander-lib.sh"; . "$(dirname "$0")/frontend-lib.sh"

need_cmd curl
[[ -x $EP_PYTHON ]] || skip "needs $EP_PYTHON"

EP_PORT=$(free_port)
EP_ADDR=127.0.0.1:$EP_PORT
EP_URL=http://$EP_ADDR
DEMO_WORKER=$(bin elastic-pool-demo-worker)
FE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Every request head that reached a frontend-worker.py, one JSON line each.
FE_HEADS=$EP_TMP/heads.jsonl
# curl for one request: quiet, bounded, no proxy from the environment.
CURL=(curl -s --noproxy '*' --max-time 30)

# The exec= of a frontend-worker.py worker (echoes request heads; see its --help) logging heads to
# $FE_HEADS.
test_worker() {
        echo "$(bin elastic-pool-sensor) -- $EP_PYTHON $FE_DIR/frontend-worker.py --log $FE_HEADS"
}

# fe_config EXEC [section.key=value...]: write_config with the listener on $EP_ADDR.
fe_config() {
        local exec=$1
        shift
        write_config "$exec" "frontend.listen=$EP_ADDR" "$@"
}

# Starts the commander on $EP_CONF and waits until it is ready (min_workers routable, listening).
fe_start() {
        start_commander "$@"
        wait_ready
}

# How many request heads reached the test workers so far.
heads_count() {
        if [[ -f $FE_HEADS ]]; then grep -c '"head"' "$FE_HEADS" || true; else echo 0; fi
}

# Prints the last request head a test worker received (CRLF line ends kept).
last_head() {
        "$EP_PYTHON" -c 'import json, sys
heads = [json.loads(l) for l in open(sys.argv[1]) if "\"head\"" in l]
sys.stdout.write(heads[-1]["head"])' "$FE_HEADS"
}

# head_conn PATH: "worker/conn" of the last request for PATH (the target's path) a test worker got.
head_conn() {
        "$EP_PYTHON" -c 'import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    if "head" in d and d["head"].split(" ")[1].split("?")[0] == sys.argv[2]:
        found = "%s/%s" % (d["worker"], d["conn"])
print(found)' "$FE_HEADS" "$1"
}

# json_get JSON KEY: prints one top-level value of a JSON object ("" for null or missing).
json_get() {
        "$EP_PYTHON" -c 'import json, sys
v = json.loads(sys.argv[1]).get(sys.argv[2])
print("" if v is None else v)' "$1" "$2"
}

# The worker that answers /_monitor/state for these curl arguments ("1" for w1).
monitor_worker() {
        local body
        body=$("${CURL[@]}" "$@" "$EP_URL/_monitor/state") || return 1
        json_get "$body" worker
}

# The reception's number ("1" for w1): the first worker that became routable, as the log says.
reception() {
        grep -oE 'Worker w[0-9]+ is routable .*; it is the reception' "$EP_LOG" | tail -n 1 | sed -E 's/^Worker w([0-9]+) .*/\1/'
}

# The commander answers HTTP on $EP_URL.
fe_answers() {
        "${CURL[@]}" -o /dev/null "$EP_URL/"
}

# raw_send BYTES: sends BYTES (Python escapes: \r \n \x00 ...) on one connection to the listener and
# prints everything the commander answers until it closes the connection; "<no EOF>" after 20 s.
raw_send() {
        "$EP_PYTHON" - "$1" "$EP_ADDR" <<'EOF'
import socket, sys
data = sys.argv[1].encode().decode("unicode_escape").encode("latin-1")
host, port = sys.argv[2].rsplit(":", 1)
s = socket.create_connection((host, int(port)))
s.settimeout(20)
s.sendall(data)
out = b""
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
except socket.timeout:
    out += b"\n<no EOF>\n"
except ConnectionResetError:
    out += b"\n<reset>\n"
sys.stdout.write(out.decode("latin-1"))
EOF
}

# Prints the status codes of the HTTP/1.1 responses in raw_send output, one per line.
statuses() {
        grep -aoE '^HTTP/1\.[01] [0-9]{3}' | cut -d' ' -f2
}

# rss_sampler PID FILE: samples PID's VmRSS (KiB) every 50 ms into FILE, one line each, until killed.
# Start it with spawn_bg; the test reads the peak with peak_of FILE.
rss_sampler() {
        local pid=$1 file=$2
        while kill -0 "$pid" 2>/dev/null; do
                rss_kib "$pid" >>"$file" 2>/dev/null || break
                sleep 0.05
        done
}

peak_of() {
        sort -n "$1" | tail -n 1
}

# sticky_scenario CURL_ARGS...: guests reach the reception; /login?user=alice sets the signed sticky
# cookie; 100 /state requests with it (each its own connection) reach one worker and count 1..100;
# Elastic-Pool-User never reaches the client; /logout clears the cookie and revokes it: replayed, the
# old cookie is a guest (logged "revoked by logout", nobody re-placed), and a login right after the
# logout gets a cookie that works at once. CURL_ARGS pick the protocol (e.g. --http1.1,
# --http2-prior-knowledge). Needs a demo-worker pool.
sticky_scenario() {
        local proto=("$@") jar=$EP_TMP/jar hdr=$EP_TMP/headers body w first="" i cookie rec

        rec=$(reception)
        [[ -n $rec ]] || fail "no reception in the log"
        for i in 1 2 3 4 5; do
                w=$(monitor_worker "${proto[@]}") || fail "guest request $i failed"
                [[ $w == "$rec" ]] || fail "guest request $i went to w$w, not to the reception w$rec"
        done

        body=$("${CURL[@]}" "${proto[@]}" -c "$jar" -D "$hdr" "$EP_URL/login?user=alice") ||
                fail "login failed"
        grep -qE '^HTTP/[0-9.]+ 200' "$hdr" || fail "login answered $(head -n1 "$hdr")"
        note "login: $(grep -i '^set-cookie:' "$hdr" | tr -d '\r')"
        # user.expiry.issued.mac
        grep -qiE '^set-cookie: ep_user=[A-Za-z0-9_-]+\.[0-9]+\.[0-9]+\.[A-Za-z0-9_-]+;' "$hdr" ||
                fail "no signed ep_user cookie in the login response"
        local sc
        sc=$(grep -i '^set-cookie: ep_user=' "$hdr" | tr -d '\r')
        for attr in HttpOnly 'SameSite=Lax' 'Path=/' 'Max-Age=[0-9]+'; do
                grep -qE "; ?$attr(;|$)" <<<"$sc" || fail "the sticky cookie lacks $attr: $sc"
        done
        grep -q 'Secure' <<<"$sc" && fail "the cookie says Secure for a plain-http client: $sc"
        grep -qi '^elastic-pool-user' "$hdr" && fail "Elastic-Pool-User reached the client"
        cookie=$(awk '$6 == "ep_user" { print $7 }' "$jar")
        [[ -n $cookie ]] || fail "curl kept no ep_user cookie"

        for i in $(seq 100); do
                body=$("${CURL[@]}" "${proto[@]}" -b "$jar" -D "$hdr" "$EP_URL/state") || fail "/state $i failed"
                grep -qi '^elastic-pool-user' "$hdr" && fail "Elastic-Pool-User reached the client"
                # {"user":"alice","counter":N,"worker":"W",...}, parsed in bash: 100 python starts are slow
                [[ $body =~ \"user\":\"alice\",\"counter\":([0-9]+),\"worker\":\"([0-9]+)\" ]] ||
                        fail "/state $i: $body"
                [[ ${BASH_REMATCH[1]} == "$i" ]] || fail "/state $i: counter is not $i: $body"
                w=${BASH_REMATCH[2]}
                [[ -n $first ]] || first=$w
                [[ $w == "$first" ]] || fail "/state $i went to w$w, earlier ones to w$first"
        done
        note "100 /state requests of alice on w$first, counter 1..100"
        log_has "User alice logged in on w$first" || fail "no log line for alice's login"

        "${CURL[@]}" "${proto[@]}" -b "$jar" -c "$jar" -D "$hdr" -o /dev/null "$EP_URL/logout" || fail "logout failed"
        note "logout: $(grep -i '^set-cookie:' "$hdr" | tr -d '\r')"
        grep -qiE '^set-cookie: ep_user=;.*Max-Age=0' "$hdr" || fail "logout did not clear the cookie"
        grep -qi '^elastic-pool-user' "$hdr" && fail "Elastic-Pool-User reached the client"
        [[ -z $(awk '$6 == "ep_user" { print $7 }' "$jar") ]] || fail "curl still holds the cookie after logout"
        wait_log "User alice logged out of w$first after [0-9]+ requests"

        # as a guest now: no state
        [[ $("${CURL[@]}" "${proto[@]}" -b "$jar" -o /dev/null -w '%{http_code}' "$EP_URL/state") == 404 ]] ||
                fail "/state after logout is not 404"
        # the old cookie is still validly signed, but the logout revoked it: a guest, not alice placed
        # again (which would send X-Elastic-Pool-User: alice to a worker)
        body=$("${CURL[@]}" "${proto[@]}" -H "Cookie: ep_user=$cookie" -w ' %{http_code}' "$EP_URL/state")
        [[ $body == *' 404' ]] || fail "/state with the pre-logout cookie: $body"
        wait_log 'sticky cookie of user alice revoked by logout, treated as a guest'
        ! log_has 'User alice re-placed' ||
                fail "the revoked cookie placed alice again: $(grep -m1 'User alice re-placed' "$EP_LOG")"

        # a login right after the logout (the same second, most likely) works at once; the old cookie
        # stays revoked
        "${CURL[@]}" "${proto[@]}" -c "$jar" -o /dev/null "$EP_URL/login?user=alice" ||
                fail "second login failed"
        body=$("${CURL[@]}" "${proto[@]}" -b "$jar" "$EP_URL/state") ||
                fail "/state after the second login failed"
        [[ $body == *'"user":"alice","counter":1,'* ]] || fail "/state after the second login: $body"
        body=$("${CURL[@]}" "${proto[@]}" -H "Cookie: ep_user=$cookie" -w ' %{http_code}' "$EP_URL/state")
        [[ $body == *' 404' ]] || fail "/state with the pre-logout cookie after a new login: $body"
}

# head_values NAME: the values of field NAME (case-insensitive) in the last head a test worker got.
head_values() {
        last_head | tr -d '\r' | awk -v want="$1" 'NR > 1 && index($0, ":") > 0 {
                name = tolower(substr($0, 1, index($0, ":") - 1))
                value = substr($0, index($0, ":") + 1)
                sub(/^[ \t]+/, "", value)
                if (name == tolower(want)) print value
        }'
}

# expect_field NAME VALUE: the last head has exactly one NAME field, with this value.
expect_field() {
        local got
        got=$(head_values "$1")
        [[ $got == "$2" ]] || fail "the worker got $1: '${got//$'\n'/' | '}', want '$2'"
}

# expect_no_field NAME: the last head has no NAME field.
expect_no_field() {
        local got
        got=$(head_values "$1")
        [[ -z $got ]] || fail "the worker got $1: $got"
}

# h2_request ARGS...: frontend-h2-client.py against the listener (see its --help); prints its JSON.
h2_request() {
        "$EP_PYTHON" "$FE_DIR/frontend-h2-client.py" "$EP_ADDR" "$@"
}

# stream_scenario BYTES CURL_ARGS...: uploads BYTES to the demo worker (POST /work, the body counted) and
# downloads BYTES from it (/work?bytes=BYTES) with curl speaking as CURL_ARGS say, while sampling the
# commander's VmRSS; fails when either transfer is incomplete or the commander grew by the bound or more
# (STREAM_RSS_GROWTH_MAX_KIB below: 4 MiB, 16 MiB under the sanitizers).
# The upload is a sparse file sent with its length, then the same from a pipe (unknown length: chunked
# on HTTP/1.1, DATA without content-length on HTTP/2).
# What one transfer may keep in the commander is a few windows and high-water marks, whatever the body's
# size: the h2 stream window (256 KiB), the client side's write queue (256 KiB), the forward side's
# buffers; under 1 MiB together. Measured growth of VmRSS streaming 100 MiB (h1, h2) and 1 GiB (h1) each
# way, three runs of each: 0.65-0.77 MiB in the plain build, 2.8-3.8 MiB under ASan (shadow memory and
# the allocator's metadata). The bounds leave 4-5 times that for allocator noise and still fail on any
# buffering that grows with the body (the earlier 64 MiB let 60 % of a 100 MiB body through).
if [[ ${EP_SANITIZE:-OFF} == ON ]]; then
        STREAM_RSS_GROWTH_MAX_KIB=$((16 * 1024))
else
        STREAM_RSS_GROWTH_MAX_KIB=$((4 * 1024))
fi

stream_scenario() {
        local bytes=$1
        shift
        local proto=("$@") start peak out t0 samples=$EP_TMP/rss.samples file=$EP_TMP/upload.bin
        truncate -s "$bytes" "$file"
        : >"$samples"
        start=$(rss_kib "$EP_COMMANDER_PID")
        spawn_bg rss_sampler "$EP_COMMANDER_PID" "$samples"
        local sampler=$EP_LAST_PID

        t0=$SECONDS
        out=$("${CURL[@]}" --max-time 600 "${proto[@]}" -X POST -T "$file" -H 'Content-Type: application/octet-stream' \
                "$EP_URL/work") || fail "upload with a length failed: $out"
        [[ $out == *"\"body_bytes\":$bytes"* ]] || fail "upload with a length: the worker says $out"
        note "upload of $bytes bytes with a length: $((SECONDS - t0)) s"
        t0=$SECONDS
        out=$(head -c "$bytes" /dev/zero | "${CURL[@]}" --max-time 600 "${proto[@]}" -X POST -T - "$EP_URL/work") ||
                fail "upload without a length failed: $out"
        [[ $out == *"\"body_bytes\":$bytes"* ]] || fail "upload without a length: the worker says $out"
        note "upload of $bytes bytes without a length: $((SECONDS - t0)) s"
        t0=$SECONDS
        out=$("${CURL[@]}" --max-time 600 "${proto[@]}" -o /dev/null -w '%{http_code} %{size_download}' \
                "$EP_URL/work?bytes=$bytes") || fail "download failed: $out"
        [[ $out == "200 $bytes" ]] || fail "download: got '$out', want '200 $bytes'"
        note "download of $bytes bytes: $((SECONDS - t0)) s"

        kill "$sampler" 2>/dev/null
        wait "$sampler" 2>/dev/null || true
        peak=$(peak_of "$samples")
        note "commander VmRSS: $start KiB at the start, peak $peak KiB over $(wc -l <"$samples") samples" \
                "(growth bound $STREAM_RSS_GROWTH_MAX_KIB KiB)"
        [[ -n $peak ]] || fail "no RSS sample"
        ((peak - start < STREAM_RSS_GROWTH_MAX_KIB)) ||
                fail "the commander grew by $((peak - start)) KiB while streaming" \
                        "(bound $STREAM_RSS_GROWTH_MAX_KIB KiB)"
        commander_alive || fail "the commander died"
}

# occupancy_over WORKER VALUE: status.json shows wWORKER's occupancy above VALUE.
occupancy_over() {
        "$EP_PYTHON" -c 'import json, sys
d = json.load(open(sys.argv[1]))
w = [w for w in d["workers"] if w["name"] == "w" + sys.argv[2]]
sys.exit(0 if w and (w[0]["occupancy"] or 0) > float(sys.argv[3]) else 1)' "$EP_RUN/status.json" "$1" "$2"
}

# worker_curl N CURL_ARGS...: curl straight to worker wN's own socket, around the commander.
worker_curl() {
        local n=$1
        shift
        "${CURL[@]}" --unix-socket "$EP_RUN/w$n.sock" "$@"
}

# Fails when the sanitizers (ASan, LSan, UBSan builds) reported anything in the commander's log, which
# the workers share.
sanitizer_clean() {
        if grep -qE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$EP_LOG"; then
                fail "the sanitizers reported: $(grep -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$EP_LOG")"
        fi
}

# Stops the commander with SIGTERM; fails unless it exits 0 with a clean sanitizer record.
fe_stop() {
        local rc=0
        stop_commander || rc=$?
        sanitizer_clean
        ((rc == 0)) || fail "commander exited with $rc"
}
