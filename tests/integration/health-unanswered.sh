#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a worker that goes on reporting but stops answering HTTP does not take the guests down with it.
# The reception (demo worker with --debug-hang) is told to hang; three requests of its user ann get 504
# (response_timeout=1s): it is taken out of new work ("3 requests in a row unanswered"), status.json and
# `elastic-poolctl status` (over a private bus, where dbus-daemon exists) say why, the reception passes
# to the healthy worker and guests get 200 from it. Its hang ends: it answers the commander's health
# probe and takes new work again. Hung again for good, it is stopped after
# hung_timeout (SIGKILL after stop_timeout) and replaced, and ann is placed again on her next request,
# the journal saying her state there is lost.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup
CTL=
if command -v dbus-daemon >/dev/null; then
        private_session_bus
else
        note "no dbus-daemon: elastic-poolctl status is not checked"
fi

fe_config "$DEMO_WORKER --debug-hang" pool.min_workers=2 pool.max_workers=2 pool.hung_timeout=8s \
        pool.unanswered_limit=3 frontend.response_timeout=1s
fe_start
wait_log 'Worker w2 is routable'
rec=$(reception) other=$((3 - $(reception)))
JAR=$EP_TMP/jar
"${CURL[@]}" -c "$JAR" -o /dev/null "$EP_URL/login?user=ann" || fail "login"
[[ $(monitor_worker -b "$JAR") == "$rec" ]] || fail "ann does not live on the reception w$rec"

# code_of ARGS...: the status code of one request (000 when none came)
code_of() {
        "${CURL[@]}" -o /dev/null -w '%{http_code}' "$@" || true
}

# hang_reception DURATION: w$rec stops answering; three of ann's requests then go unanswered (504).
hang_reception() {
        local pids=() i
        [[ $(code_of -b "$JAR" "$EP_URL/debug/hang?for=$1") == 200 ]] || fail "/debug/hang was not answered"
        for i in 1 2 3; do
                code_of -b "$JAR" "$EP_URL/hello" >"$EP_TMP/code.$i" &
                pids+=($!)
        done
        wait "${pids[@]}"
        for i in 1 2 3; do
                [[ $(<"$EP_TMP/code.$i") == 504 ]] || fail "ann's request $i to the hung w$rec: $(<"$EP_TMP/code.$i")"
        done
}

# 1. a hang of a few seconds: out of new work, and back once it answers again
hang_reception 5s
wait_log "w$rec is taken out of new work: 3 requests in a row unanswered"
wait_log "w$other is now the reception"
wait_until grep -q '"unhealthy":"3 requests in a row unanswered' "$EP_RUN/status.json" ||
        fail "status.json does not say why w$rec takes no new work"
if [[ -n $CTL ]]; then
        "$CTL" --user status "t$$" >"$EP_TMP/ctl.txt" || fail "elastic-poolctl status failed"
        grep -qE "^w$rec .*out of new work: 3 requests in a row unanswered" "$EP_TMP/ctl.txt" ||
                fail "elastic-poolctl status does not say why w$rec takes no new work: $(cat "$EP_TMP/ctl.txt")"
        note "elastic-poolctl status: $(grep -E "^w$rec " "$EP_TMP/ctl.txt")"
fi
for i in 1 2 3 4 5; do
        [[ $(monitor_worker) == "$other" ]] || fail "guest request $i did not go to w$other while w$rec hangs"
done
note "guests served by w$other while w$rec hangs"
EP_WAIT=15 wait_log "w$rec answers again: it answered a health probe \\(HTTP [0-9]+\\)"
wait_log "w$rec takes new work again"
wait_until bash -c "! grep -q '\"unhealthy\"' '$EP_RUN/status.json'" || fail "status.json still says unhealthy"
log_has "\\[death w$rec\\]" && fail "w$rec was stopped although it answered again"

# 2. hung for good: stopped after hung_timeout through its pidfd, replaced, ann placed again
hang_reception 600s
taken_out_twice() {
        (($(grep -c "w$rec is taken out of new work: 3 requests in a row unanswered" "$EP_LOG") >= 2))
}
wait_until taken_out_twice || fail "w$rec was not taken out of new work a second time"
EP_WAIT=20 wait_log "w$rec left requests unanswered for .* \\(hung_timeout=8s\\): stopping it"
EP_WAIT=15 wait_log "\\[death w$rec\\]"
EP_WAIT=15 wait_log 'Worker w3 is routable'
wait_log "1 users lived on w$rec, which is gone: .*state there is lost"
[[ $(code_of -b "$JAR" "$EP_URL/hello") == 200 ]] || fail "ann's next request was not answered"
fe_stop
