#!/bin/bash
# Intent: a worker command that cannot be executed comes back as a logged error naming the whole command
# line and errno (over the close-on-exec pipe), and the spawn throttle stops after repeated failures.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
make_test_cgroup

write_config "/nonexistent/elastic-pool-worker --flag"
start_commander --no-frontend
wait_log "w1 failed to start: cannot execute '/nonexistent/elastic-pool-worker --flag': No such file or directory"
EP_WAIT=30 wait_log 'Stopped spawning workers after 5 consecutive failed spawns'
commander_alive || fail "commander died"
wait_until bash -c "grep -q '\"given_up\":true' '$EP_RUN/status.json'" || fail "status.json does not say spawning stopped"
stop_commander || fail "commander exited with $?"
