#!/bin/bash
# SPDX-License-Identifier: MIT
# The demo worker's fault options on its command line: --help describes them; bad values (not a
# duration, negative, too large, empty, missing, a value given to the flag --install-error) exit 2 with a
# message naming the option and the value; good ones are accepted.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/demo-worker-lib.sh"

help=$("$DEMO_WORKER" --help)
for opt in --install-delay --install-error --snapshot-delay; do
        grep -q -- "$opt" <<<"$help" || fail "--help does not describe $opt"
done
grep -q 'stall' <<<"$help" || fail "--help does not say that the delays stall the worker"

# refused NAMED ARGS...: the worker exits 2 at once and its message contains NAMED (the option, the value).
refused() {
        local named=$1 rc=0 msg
        shift
        # timeout: were the value accepted, the worker would serve on $DEMO_SOCK until stopped
        msg=$(timeout 10 "$DEMO_WORKER" --listen "$DEMO_SOCK" "$@" 2>&1) || rc=$?
        ((rc == 2)) || fail "'$*' exited $rc, expected 2: $msg"
        grep -qF -- "$named" <<<"$msg" || fail "the message for '$*' does not name $named: $msg"
}
refused "--install-delay 'x'" --install-delay x
refused "--install-delay '-1s'" --install-delay -1s
refused "--install-delay '5parsecs'" --install-delay 5parsecs
refused "--snapshot-delay '1e400'" --snapshot-delay 1e400
refused "--snapshot-delay ''" --snapshot-delay ""
refused "--install-error=yes" --install-error=yes
refused "--snapshot-delay" --snapshot-delay

demo_start --install-delay 200ms --install-error --snapshot-delay 0
demo_stop
echo "OK"
