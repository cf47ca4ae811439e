#!/bin/bash
# SPDX-License-Identifier: MIT
# The main job: elastic-pool fronting a pool of demo workers while a load generator ramps many
# logged-in users up and down for about a minute. Users that leave stay logged in, idle, as real users
# do; one line a second shows the load (users, idle sessions, requests/s, p99, errors, sticky errors)
# and the pool as the commander sees it (one occupancy bar per worker), so the pool is seen to grow
# under the load and, after it, to shrink by moving the idle users (their state along) to the workers
# that stay. Ctrl-C logs the users out, stops the pool and prints the summary; everything started here
# is stopped and removed on exit.
#
#   EP_DEMO_PORT=8081 scripts/demo.sh    another port than 8080
#   EP_DEMO_KEEP=1 scripts/demo.sh       keep the temp dir (the commander's log, status.json)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
port=${EP_DEMO_PORT:-8080}
url=http://127.0.0.1:$port

# The commander would refuse a port in use too, but only after the build: say it first.
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        echo "demo: something already listens on 127.0.0.1:$port; stop it or pick another port: EP_DEMO_PORT=N $0" >&2
        exit 1
fi

build=$("$top/scripts/build.sh")
commander=$build/daemon/elastic-pool
loadgen=$build/demo/elastic-pool-loadgen
worker=$build/demo/elastic-pool-demo-worker
tmp=$(mktemp -d /tmp/elastic-pool-demo.XXXXXX)
log=$tmp/commander.log
commander_pid=""
events_pid=""

# Stops the commander (SIGTERM: it drains the front end, then stops every worker) and waits for it;
# SIGKILL after 30 s. Returns its exit status.
stop_commander() {
        local rc=0
        [[ -n $commander_pid ]] || return 0
        kill -TERM "$commander_pid" 2>/dev/null || true
        for _ in $(seq 300); do kill -0 "$commander_pid" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$commander_pid" 2>/dev/null; then
                echo "demo: the commander did not stop within 30 s; killing it" >&2
                kill -KILL "$commander_pid" 2>/dev/null || true
        fi
        wait "$commander_pid" 2>/dev/null || rc=$?
        commander_pid=""
        return $rc
}

# A commander that was killed leaves its workers behind in the group's cgroup: kill and remove it.
remove_leftover_cgroup() {
        local root rel dir
        root=$(sed -n 's/.*writable cgroup v2 at \([^ ,]*\).*/\1/p' "$log" 2>/dev/null | head -n1)
        rel=$(sed -n 's/.*Spawned worker w[0-9]* (pid [0-9]*, cgroup \(\/[^)]*\)\/w[0-9]*).*/\1/p' "$log" 2>/dev/null |
                head -n1)
        [[ -n $root && -n $rel ]] || return 0
        dir=$root$rel
        [[ -d $dir ]] || return 0
        echo 1 >"$dir/cgroup.kill" 2>/dev/null || true
        for _ in $(seq 50); do grep -qs '^populated 0' "$dir/cgroup.events" && break; sleep 0.1; done
        find "$dir" -depth -type d -exec rmdir {} \; 2>/dev/null || true
}

cleanup() {
        set +e
        [[ -n $events_pid ]] && kill "$events_pid" 2>/dev/null
        if [[ -n $commander_pid ]]; then
                stop_commander >/dev/null 2>&1
                remove_leftover_cgroup
        fi
        if [[ -n ${EP_DEMO_KEEP:-} ]]; then
                echo "demo: kept $tmp"
        else
                rm -rf "$tmp"
        fi
}
trap cleanup EXIT
# Ctrl-C reaches the load generator too (same process group), which logs its users out and ends with
# its summary; the script then goes on to stop the commander. The commander runs in a session of its
# own so that the same Ctrl-C does not stop the pool under the users' feet. The trap is a no-op rather
# than '' because an ignored SIGINT would be inherited by the load generator.
trap ':' INT TERM

# The built-in defaults report every 5 s and judge a worker on the average of its last 6 reports: 30 s
# of history, right for a production pool that should not chase bursts, but a one-minute ramp would
# be over before the pool reacted. Reports every second averaged over 3 let the pool follow the ramp
# within ~3 s, and let compaction (which waits for fresh readings after every change) retire a worker
# every few seconds once the load is gone. max_workers keeps the pool within what 2 cores can show.
cat >"$tmp/demo.conf" <<EOF
[worker]
exec = $worker --threads 4 --user-blob-size 4K

[pool]
max_workers = 4

[policy]
occupancy_interval = 1s
smoothing_rows = 3

[frontend]
listen = 127.0.0.1:$port
EOF

# backend auto: transient scopes under a systemd manager (the user's own when not root), else cgroup v2
# leaves where one is writable (root on a host without systemd, CI), else plain processes; said below.
setsid "$commander" --demo --config "$tmp/demo.conf" --runtime-dir "$tmp/run" --state-dir "$tmp/state" \
        </dev/null >"$log" 2>&1 &
commander_pid=$!

# Ready once listening with min_workers routable; a commander that exits first says why in its log.
for _ in $(seq 200); do
        grep -q 'Ready: ' "$log" && break
        if ! kill -0 "$commander_pid" 2>/dev/null; then
                echo "demo: elastic-pool failed to start:" >&2
                cat "$log" >&2
                commander_pid=""
                exit 1
        fi
        sleep 0.1
done
grep -q 'Ready: ' "$log" || { echo "demo: elastic-pool not ready after 20 s:" >&2; cat "$log" >&2; exit 1; }
backend=$(sed -n 's/.*Placement backend: \([a-z]*\).*/\1/p' "$log" | head -n1)

cat <<EOF
demo: elastic-pool is serving pool "demo" on $url (placement backend: ${backend:-?}).
      Try it by hand from another terminal while the demo runs:
        curl -c /tmp/jar '$url/login?user=me'
        curl -b /tmp/jar $url/state        # again and again: the counter rises by one, on one worker
        curl '$url/work?cpu_ms=50'

demo: now 60 users ramp up over 15 s, stay 15 s and leave over 15 s. Each logs in, then loops over
      /state and /work (5 ms of CPU and 45 ms of waiting on one of a worker's 4 executor threads),
      thinking ~100 ms in between. A worker is full (occupancy 1.0) when all its threads are busy or
      it burns a whole core; the reception (w1) keeps new users below 0.5, others admit them below
      0.8, and when none can, the pool grows; a worker that stays over 0.8 hands its heaviest users
      to one with room (relief). Users that leave stay logged in, as real users do: idle, each sends
      one /state about every 5 s, and its counter must go on rising by one. Once the load is gone,
      compaction drains the least occupied worker by moving its users live, state and all, to the
      others, then retires it, until the pool is back to one worker; then every user checks its
      counter a last time and logs out.
      Per line: users live/target, idle sessions, requests/s, p99 latency, errors, sticky errors (a
      counter that jumped or restarted: the user reached the wrong worker, or its state did not move
      with it), then each worker: occupancy bar, value, users.

EOF

# The pool's decisions, as the commander logs them, between the load generator's lines.
tail -n 0 -F --pid=$$ "$log" 2>/dev/null | while IFS= read -r line; do
        case $line in
        # compaction's decisions and drains, relief rounds; not each user's move (one line per user)
        *'] Compaction: cannot move user '*) ;;
        *'] Scale-up: '* | *'] Compaction: '* | *'] Relief: '* | *'] Relief of w'* | *'scale-up refused'* | \
                *'] Worker w'*' exited '* | *'] Worker w'*' was killed'*)
                line=${line#*: }
                printf '      pool: %s\n' "${line%% | *}" | cut -c1-160
                ;;
        esac
done &
events_pid=$!

lg_rc=0
"$loadgen" --url "$url" --users 60 --profile ramp --duration 45s --think 100ms --mix 1:1 \
        --cpu-ms 5 --sleep-ms 45 --keep-sessions --status "$tmp/run/status.json" --linger 25s \
        --summary-file "$tmp/summary" || lg_rc=$?
kill "$events_pid" 2>/dev/null || true
events_pid=""

echo
echo "demo: stopping elastic-pool (SIGTERM)"
c_rc=0
stop_commander || c_rc=$?
# A compaction retires an empty worker ("Compaction: retiring a worker") or drains one by live moves
# ("Compaction: wN drained: K users moved ...; retiring it"). The moves in all count relief and the
# reception's hand-offs too: every "Move N of user U ... done" (or "re-pointed", a user with no state).
count() { grep -cE "$1" "$log" || true; }
spawns=$(count '\] Scale-up: spawning')
retired=$(count '\] Compaction: retiring a worker')
drained=$(count '\] Compaction: w[0-9]+ drained: ')
drain_moved=$(sed -n 's/.*\] Compaction: w[0-9]* drained: \([0-9]*\) users moved.*/\1/p' "$log" |
        awk '{ n += $1 } END { print n + 0 }')
moves=$(count '\] Move [0-9]+ of user .* (done|re-pointed) after ')
echo "demo: elastic-pool exited with status $c_rc after $spawns spawns and $((retired + drained)) compactions" \
        "($retired of an empty worker, $drained drained by moving $drain_moved users)"
echo "demo: $moves live moves of users in all (compaction drains, relief, the reception passing new users on)"
echo
[[ -s $tmp/summary ]] && cat "$tmp/summary"
exit $((lg_rc != 0 || c_rc != 0))
