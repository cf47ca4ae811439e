#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: by default ([frontend] io_uring = no) the front end makes one system call per socket read and
# write and never touches io_uring. A reload to io_uring = yes hands them to the kernel in batches: 32
# keep-alive clients whose requests are ready together (frontend-batch-clients.py) are answered with far
# fewer system calls than reads and writes (/metrics: frontend_io_ops_total over
# frontend_io_syscalls_total), with the same answers; a reload back to no makes it one call each again.
# Under a seccomp filter that refuses io_uring, as a unit's SystemCallFilter= would, the commander says
# once why it has no ring, the monitor shows it (frontend.io "syscalls", frontend.io_uring_error), and
# every request is answered all the same, one system call each.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
. "$(dirname "$0")/admin-lib.sh"
make_test_cgroup

n=32
metric() {
        admin_curl /metrics | awk -v m="elastic_pool_$1" '$1 ~ "^" m "[{ ]" { print $2 }'
}
# clients LABEL: $n clients ready together, every request answered; sets ops and calls, the batched reads
# and writes they took and the system calls those took
clients() {
        local ops0 calls0
        ops0=$(metric frontend_io_ops_total) calls0=$(metric frontend_io_syscalls_total)
        out=$("$EP_PYTHON" "$FE_DIR/frontend-batch-clients.py" "$EP_ADDR" "$EP_COMMANDER_PID" --connections $n) ||
                fail "not every request was answered ($1): $out"
        ops=$(($(metric frontend_io_ops_total) - ops0)) calls=$(($(metric frontend_io_syscalls_total) - calls0))
        note "$1: $ops reads and writes in $calls system calls"
}
one_call_each() {
        ((ops > 0 && calls == ops)) || fail "without io_uring each write is one system call ($1): $ops writes, $calls calls"
}

admin_config "$DEMO_WORKER"
fe_start
note "io_uring = no, the default"
[[ $(monitor_json 'd["frontend"]["io"]') == syscalls ]] || fail "the monitor does not say syscalls by default"
[[ $(metric frontend_io_uring) == 0 ]] || fail "frontend_io_uring is not 0 by default"
! log_has 'io_uring' || fail "the commander spoke of io_uring it was not asked for: $(grep io_uring "$EP_LOG")"
clients "io_uring = no"
one_call_each "the default"

note "reload to io_uring = yes"
admin_config "$DEMO_WORKER" frontend.io_uring=yes
kill -HUP "$EP_COMMANDER_PID"
wait_log 'batches, through io_uring|gives no io_uring'
if [[ $(monitor_json 'd["frontend"]["io"]') != io_uring ]]; then
        skip "the kernel gives this host no io_uring: $(monitor_json 'd["frontend"]["io_uring_error"]')"
fi
[[ $(metric frontend_io_uring) == 1 ]] || fail "frontend_io_uring is not 1 after the reload"
clients "io_uring"
((ops >= 4 * 2 * n)) || fail "fewer reads and writes than $((2 * n)) requests need: $ops"
# the warm-up's requests come one by one; the $n ready together are read in one call, and their heads
# written to the worker in another: at least $n calls fewer than reads and writes
((calls + n <= ops)) || fail "no batching: $ops reads and writes took $calls system calls"

note "reload back to io_uring = no"
admin_config "$DEMO_WORKER" frontend.io_uring=no
kill -HUP "$EP_COMMANDER_PID"
wait_log 'io_uring=no, socket reads and writes take one system call each'
[[ $(metric frontend_io_uring) == 0 ]] || fail "frontend_io_uring is not 0 after the reload"
[[ $(monitor_json 'd["frontend"]["io"]') == syscalls ]] || fail "the monitor does not say syscalls after the reload"
clients "io_uring = no again"
one_call_each "after the reload"
stop_commander || fail "the commander did not stop cleanly"

note "io_uring refused by a seccomp filter"
admin_config "$DEMO_WORKER" frontend.io_uring=yes
EP_COMMANDER_WRAP=$(bin ep-no-io-uring) fe_start
wait_log 'the kernel gives no io_uring \(Operation not permitted\), a seccomp filter or kernel.io_uring_disabled refuses it'
[[ $(grep -c 'gives no io_uring' "$EP_LOG") == 1 ]] || fail "the refusal was said more than once"
[[ $(monitor_json 'd["frontend"]["io"]') == syscalls ]] || fail "the monitor does not say syscalls"
err=$(monitor_json 'd["frontend"]["io_uring_error"]')
[[ $err == "Operation not permitted" ]] || fail "frontend.io_uring_error is '$err'"
clients "seccomp"
one_call_each "under the filter"
[[ $(metric frontend_io_uring) == 0 ]] || fail "frontend_io_uring is not 0 under the filter"
note "refused: the front end says '$err' and answers all the same"
commander_alive || fail "the commander died"
fe_stop
