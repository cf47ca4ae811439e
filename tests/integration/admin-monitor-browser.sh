#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: an operator opens /_commander/monitor in a real browser (Debian's Chromium, headless) against a
# running demo pool of three workers whose users an operator spread 3/2/1 with live moves. After the
# page's first polls its DOM holds one row per worker with the users the commander places there, and the
# population table one row per user on the right worker; a screenshot is kept in the test's output
# folder. The page reaches nothing but the admin listener: every request the page made (Chromium's
# network log) went to the listener's origin, the answer carries a Content-Security-Policy that lets the
# browser fetch from nowhere else, and the page holds no reference to anything outside itself.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
. "$(dirname "$0")/admin-lib.sh"
need_cmd chromium
make_test_cgroup
private_session_bus

admin_config "$DEMO_WORKER" pool.min_workers=3 pool.max_workers=3 policy.compaction_margin=100
fe_start
wait_log "On the user bus as org.elasticpool.Group1.t$$"
rec=$(reception)
[[ -n $rec ]] || fail "no reception in the log"
a=$((rec % 3 + 1))
b=$((a % 3 + 1))

# six users, all born on the reception; the operator moves two to one worker and one to the other
for u in ann ben cid dan eve fay; do
        login "$u"
        as_user "$u" /state >/dev/null || fail "/state of $u"
done
for move in "dan w$a" "eve w$a" "fay w$b"; do
        out=$("$CTL" --user move $move) || fail "elastic-poolctl move $move: $out"
        note "$out"
done
want="w1=0 w2=0 w3=0"
want=${want/w$rec=0/w$rec=3}
want=${want/w$a=0/w$a=2}
want=${want/w$b=0/w$b=1}
wait_until worker_users_are "$want" || fail "the commander places $(monitor_json 'd["workers"]'), want $want"
note "users placed: $want"
# a few requests so that the rates and latencies have something to show
for u in ann dan fay; do
        for i in 1 2 3; do as_user "$u" /state >/dev/null || fail "/state of $u"; done
done

admin_curl /_commander/monitor.json -o "$EP_TEST_OUTPUT/monitor.json" || fail "no monitor.json"

# ---- the page as the listener serves it ----
"${CURL[@]}" -f -D "$EP_TMP/page.headers" -o "$EP_TMP/page.html" "$EP_ADMIN/_commander/monitor" ||
        fail "no monitor page"
csp=$(grep -i '^content-security-policy:' "$EP_TMP/page.headers" | tr -d '\r')
note "$csp"
for directive in "default-src 'none'" "connect-src 'self'" "base-uri 'none'" "form-action 'none'"; do
        [[ $csp == *"$directive"* ]] || fail "the policy lacks $directive: $csp"
done
[[ $csp != *unsafe* && $csp != *http* && $csp != *'*'* ]] || fail "the policy lets something in: $csp"
"$EP_PYTHON" - "$EP_TMP/page.html" <<'PY' || fail "the page refers to something outside itself"
import html.parser, re, sys
page = open(sys.argv[1]).read()
class Refs(html.parser.HTMLParser):
    bad = []
    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ("src", "href", "action", "srcset", "poster", "data", "formaction", "background"):
                self.bad.append((tag, k, v))
        if tag in ("link", "img", "iframe", "object", "embed", "base", "audio", "video", "source"):
            self.bad.append((tag, None, None))
r = Refs()
r.feed(page)
assert not r.bad, r.bad
# the only absolute URL is the SVG namespace name, which is never fetched
urls = re.findall(r"[a-z][a-z0-9+.-]*://[^\s\"'<>)]*", page)
assert urls == ["http://www.w3.org/2000/svg"], urls
assert not re.search(r"@import|url\(", page)
# what the script fetches: two paths of this listener, nothing else
assert sorted(set(re.findall(r'getJSON\("([^"]*)"\)', page))) == ["/_commander/monitor.json", "/_commander/population"]
assert page.count("fetch(") == 1
PY

# ---- in the browser: the DOM after the first polls, the page's requests ----
chromium_run --virtual-time-budget=6000 --log-net-log="$EP_TMP/net.json" --dump-dom "$EP_ADMIN/_commander/monitor" \
        >"$EP_TMP/dom.html" 2>"$EP_TMP/chromium-dom.log" || fail "chromium --dump-dom failed: $(tail -n 5 "$EP_TMP/chromium-dom.log")"
cp "$EP_TMP/dom.html" "$EP_TEST_OUTPUT/monitor-dom.html"
expected=$(monitor_json '" ".join("%s=%d" % (w["name"], w["users"]) for w in d["workers"])')
"$EP_PYTHON" - "$EP_TMP/dom.html" "$expected" <<'PY' || fail "the DOM after the first poll is not the pool (kept in $EP_TEST_OUTPUT/monitor-dom.html)"
import html.parser, sys
class Dom(html.parser.HTMLParser):
    workers, users, body = {}, [], {}
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        if tag == "tr" and a.get("class") == "worker":
            assert a["data-worker"] not in self.workers, a
            self.workers[a["data-worker"]] = int(a["data-users"])
        if tag == "tr" and a.get("class") == "user":
            self.users.append((a["data-user"], a["data-worker"]))
d = Dom()
d.feed(open(sys.argv[1]).read())
assert int(d.body["data-polls"]) >= 1 and int(d.body["data-population-polls"]) >= 1, d.body
want = dict((kv.split("=")[0], int(kv.split("=")[1])) for kv in sys.argv[2].split())
assert d.workers == want, (d.workers, want)
# the population table: each user once, on the worker the commander placed it on
per_worker = {}
for user, worker in d.users:
    per_worker[worker] = per_worker.get(worker, 0) + 1
assert len(d.users) == len(set(d.users)) == sum(want.values()), d.users
assert per_worker == {w: n for w, n in want.items() if n}, (per_worker, want)
print("DOM rows:", d.workers, "population rows:", len(d.users))
PY

"$EP_PYTHON" - "$EP_TMP/net.json" "$EP_ADMIN" <<'PY' || fail "the page reached beyond the admin listener"
import json, sys
log = json.load(open(sys.argv[1]))
origin = sys.argv[2]
types = {v: k for k, v in log["constants"]["logEventTypes"].items()}
page_requests, others = [], []
for e in log["events"]:
    if types.get(e["type"]) != "URL_REQUEST_START_JOB" or not e.get("params", {}).get("url"):
        continue
    p = e["params"]
    # the page's own: the document itself, and whatever it (its origin) started; the rest is the
    # browser's own housekeeping (update checks, account lookups), made with no page as initiator
    mine = p.get("request_type") == "main frame" or p.get("initiator", "").startswith("http")
    (page_requests if mine else others).append(p["url"])
assert page_requests, "no request of the page in the network log"
outside = [u for u in page_requests if not u.startswith(origin + "/")]
assert not outside, outside
paths = sorted(set(u[len(origin):] for u in page_requests))
print("the page asked:", paths, "| the browser's own requests (not the page's):", len(others))
assert "/_commander/monitor.json" in paths and "/_commander/population" in paths, paths
PY

chromium_run --virtual-time-budget=6000 --window-size=1400,1100 --hide-scrollbars \
        --screenshot="$EP_TEST_OUTPUT/monitor.png" "$EP_ADMIN/_commander/monitor" >"$EP_TMP/chromium-shot.log" 2>&1 ||
        fail "chromium --screenshot failed: $(tail -n 5 "$EP_TMP/chromium-shot.log")"
[[ $(head -c 8 "$EP_TEST_OUTPUT/monitor.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] ||
        fail "no PNG at $EP_TEST_OUTPUT/monitor.png"
(($(stat -c %s "$EP_TEST_OUTPUT/monitor.png") > 20000)) || fail "the screenshot is suspiciously small"
note "screenshot: $EP_TEST_OUTPUT/monitor.png"
fe_stop
