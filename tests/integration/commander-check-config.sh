#!/bin/bash
# Intent: --check-config validates and exits: 0 for a good file, 1 with file:line, section, key and
# what is wrong for a bad one; the daemon refuses to start on the bad file with the same message.
. "$(dirname "$0")/lib.sh"
ep=$(bin elastic-pool)
printf '[pool]\nmin_workers = 2\n' >"$EP_TMP/good.conf"
printf '[pool]\nmin_workers = 4\nmax_workers = 2\n' >"$EP_TMP/bad.conf"
printf '[policy]\nadmission_threshold = 1.5\n' >"$EP_TMP/bad2.conf"
"$ep" --check-config --config "$EP_TMP/good.conf" >"$EP_TMP/out" 2>&1 || fail "good file refused: $(cat "$EP_TMP/out")"
rc=0
"$ep" --check-config --config "$EP_TMP/bad.conf" >"$EP_TMP/out" 2>&1 || rc=$?
((rc == 1)) || fail "bad file: exit $rc, want 1"
grep -q "$EP_TMP/bad.conf:2: \[pool\] min_workers: 4 is greater than max_workers" "$EP_TMP/out" ||
        fail "unexpected message: $(cat "$EP_TMP/out")"
rc=0
"$ep" --check-config --config "$EP_TMP/bad2.conf" >"$EP_TMP/out" 2>&1 || rc=$?
((rc == 1)) || fail "bad2 file: exit $rc, want 1"
grep -q "bad2.conf:2: \[policy\] admission_threshold: 1.5 is outside (0, 1\]" "$EP_TMP/out" ||
        fail "unexpected message: $(cat "$EP_TMP/out")"
rc=0
"$ep" --group t --config "$EP_TMP/bad.conf" --runtime-dir "$EP_TMP/run" --state-dir "$EP_TMP/state" \
        >"$EP_TMP/out" 2>&1 || rc=$?
((rc == 1)) || fail "daemon started on a bad file (exit $rc)"
grep -q "bad.conf:2: \[pool\] min_workers" "$EP_TMP/out" || fail "daemon message lacks file:line: $(cat "$EP_TMP/out")"
rc=0
"$ep" --check-config >"$EP_TMP/out" 2>&1 || rc=$?
((rc == 2)) || fail "missing --group: exit $rc, want 2"
true
