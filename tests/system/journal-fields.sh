#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Intent: under systemd the commander logs to the journal natively, and an operator can select its
# lifecycle events and decisions by field: EP_GROUP, EP_EVENT, EP_WORKER, the documented MESSAGE_IDs,
# and for decisions EP_DECISION, EP_INPUTS and EP_LEDGER (enough to replay them by hand).
#
# Runs inside the systemd user sandbox: tests/system/run-in-sandbox.sh tests/system/journal-fields.sh
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/scope-lib.sh"
need_cmd journalctl

ids=$EP_SOURCE_DIR/daemon/journal-ids.h
id_of() { sed -n "s/^#define MESSAGE_ID_$1 \"\([0-9a-f]*\)\".*/\1/p" "$ids"; }

write_config 1 1
on_exit "ucl stop $SERVICE.service >/dev/null 2>&1; ucl reset-failed $SERVICE.service >/dev/null 2>&1"
# no StandardOutput redirection and no EP_LOG_TARGET: stderr is the journal stream, as in a unit
systemd-run --user --quiet --unit="$SERVICE" -p RemainAfterExit=yes -E ASAN_OPTIONS=detect_leaks=1 \
        "$COMMANDER" --group "$GROUP" --config "$EP_TMP/$GROUP.conf" --runtime-dir "$EP_TMP/run" --no-frontend

entries() { journalctl --no-pager -o json "_SYSTEMD_USER_UNIT=$SERVICE.service" "$@" 2>/dev/null; }
has_ready() { entries EP_EVENT=ready | grep -q .; }
EP_WAIT=60 wait_until has_ready || fail "no EP_EVENT=ready entry in the journal within 60 s"

# One entry per check, parsed as JSON: the fields must be there with the right values.
check() {
        local what=$1 filter=$2 want=$3
        entries "$filter" | "$EP_PYTHON" -c '
import json, sys
want = json.loads(sys.argv[1])
for line in sys.stdin:
    e = json.loads(line)
    if all(e.get(k) == v for k, v in want.items()):
        sys.exit(0)
sys.exit(1)' "$want" || fail "$what: no journal entry with $want among: $(entries "$filter" | head -c 600)"
}
check "spawn" EP_EVENT=spawn "{\"MESSAGE_ID\":\"$(id_of SPAWN)\",\"EP_GROUP\":\"$GROUP\",\"EP_WORKER\":\"w1\",\"PRIORITY\":\"6\",\"SYSLOG_IDENTIFIER\":\"elastic-pool\"}"
check "ready" EP_EVENT=ready "{\"MESSAGE_ID\":\"$(id_of READY)\",\"EP_WORKER\":\"w1\"}"
check "scale-up decision" EP_EVENT=scale-up "{\"MESSAGE_ID\":\"$(id_of SCALE_UP)\",\"EP_DECISION\":\"spawn\"}"
entries EP_EVENT=scale-up | grep -q '"EP_LEDGER":"N=' || fail "the scale-up entry has no EP_LEDGER"
entries EP_EVENT=scale-up | grep -q '"EP_INPUTS"' || fail "the scale-up entry has no EP_INPUTS"
entries EP_EVENT=spawn | grep -q '"CODE_FUNC":"log_to_journal"' && fail "entries carry the logger's own CODE_FUNC"

ucl kill --kill-who=main --signal=SIGTERM "$SERVICE.service"
has_stop() { entries EP_EVENT=death | grep -q .; }
EP_WAIT=30 wait_until has_stop || fail "no EP_EVENT=death entry after SIGTERM"
check "stop" EP_EVENT=stop "{\"MESSAGE_ID\":\"$(id_of STOP)\",\"EP_GROUP\":\"$GROUP\"}"
check "death" EP_EVENT=death "{\"MESSAGE_ID\":\"$(id_of DEATH)\",\"EP_WORKER\":\"w1\"}"
note "$(entries EP_EVENT=death | "$EP_PYTHON" -c 'import json,sys; print(json.loads(sys.stdin.readline())["MESSAGE"])')"
