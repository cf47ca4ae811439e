# shellcheck shell=bash disable=SC2034
# SPDX-License-Identifier: MIT
# (SC2034 is off: the variables set here are read by the scripts that source this file.)
# Shared by bench/proxy-compare.sh and bench/profile-forward.sh (bash; source it after setting -euo
# pipefail): a work directory and a fresh cgroup v2 parent that are always removed, elastic-pool with its
# own demo worker(s), and nginx, HAProxy and nghttpx configured in front of the SAME worker socket. The
# disturbance helpers (span_begin, span_end, pairs_median, machine_ticks) come from bench-lib.sh.
#
# Inputs (set before sourcing, all optional): BENCH_WORKERS (1), BENCH_PIN (1), BENCH_PORT_BASE (18180),
# BENCH_KEEP=DIR (copy logs and configurations there on exit), BENCH_CONNS (64: the upstream keep-alive
# connections each peer may keep, as elastic-pool's upstream_connections default), BENCH_FRONTEND="KEY =
# VALUE" (more keys for elastic-pool's [frontend] section, one line each, e.g. "io_uring = yes").
# start_baseline starts a second commander of another build beside the first, to compare two builds in
# one run.

bench_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/bench-lib.sh
. "$bench_top/bench/bench-lib.sh"
n_workers=${BENCH_WORKERS:-1}
pin=${BENCH_PIN:-1}
port_base=${BENCH_PORT_BASE:-18180}
conns=${BENCH_CONNS:-64}
threads=${BENCH_THREADS:-2}
h2_clients=${BENCH_H2_CLIENTS:-16}
h2_streams=${BENCH_H2_STREAMS:-4}

# h2load_shape PROTO RATE: sets h2load_args, h2load's connections for PROTO (h1: --h1 over wrk's $conns;
# h2: $h2_clients with $h2_streams streams each) and, unless RATE is 0, --rps for RATE requests/s in
# all (h2load's --rps is per client).
h2load_shape() {
        local n
        if [[ $1 == h1 ]]; then
                h2load_args=(--h1 -c"$conns") n=$conns
        else
                h2load_args=(-c"$h2_clients" -m"$h2_streams") n=$h2_clients
        fi
        (($2 == 0)) || h2load_args+=(--rps="$(awk -v r="$2" -v c="$n" 'BEGIN { printf "%.0f", r / c }')")
}

bench_fail() {
        echo "$(basename "$0"): $*" >&2
        exit 1
}

[[ $(id -u) -eq 0 ]] || bench_fail "run as root (packages, cgroups)"

# bench_build [BUILD_DIR]: installs the peers and sets $build, $commander, $worker.
bench_build() {
        "$bench_top/scripts/bootstrap.sh" --bench >/dev/null
        build=${1:-$("$bench_top/scripts/build.sh")}
        build=$(cd "$build" && pwd) # the configuration names binaries by absolute path
        commander=$build/daemon/elastic-pool
        worker=$build/demo/elastic-pool-demo-worker
        local b c
        for b in "$commander" "$worker"; do [[ -x $b ]] || bench_fail "no $b: build the tree first"; done
        for c in nginx haproxy nghttpx wrk h2load taskset ss curl; do command -v "$c" >/dev/null || bench_fail "$c is missing"; done
}

if [[ $pin == 1 ]]; then
        (($(nproc) >= 2)) || bench_fail "BENCH_PIN=1 needs 2 CPUs; set BENCH_PIN=0"
        on_proxy=(taskset -c 0)
        on_load=(taskset -c 1)
else
        on_proxy=()
        on_load=()
fi

port_ep=$port_base
port_ngx_h1=$((port_base + 1)) port_ngx_h2=$((port_base + 2))
port_hap_h1=$((port_base + 3)) port_hap_h2=$((port_base + 4))
port_ngxa_h1=$((port_base + 5)) port_ngxa_h2=$((port_base + 6))
port_direct=$((port_base + 7))
port_base_ep=$((port_base + 8))
port_ngh=$((port_base + 9)) # nghttpx: HTTP/1.1 and h2c (prior knowledge) on one cleartext port
port_hap2_h1=$((port_base + 10)) port_hap2_h2=$((port_base + 11)) # HAProxy nbthread 2 (proxy-compare.sh)
for p in $(seq "$port_base" $((port_base + 11))); do
        ! ss -Hltn "sport = :$p" | grep -q . || bench_fail "port $p is taken (set BENCH_PORT_BASE)"
done

work=$(mktemp -d /tmp/ep-bench.XXXXXX)
chmod 755 "$work" # nginx's and HAProxy's processes reach the worker socket below it
cgroot=""
for d in /sys/fs/cgroup/unified /sys/fs/cgroup; do
        [[ $(stat -fc %T "$d" 2>/dev/null) == cgroup2fs ]] && { cgroot=$d; break; }
done
[[ -n $cgroot ]] || bench_fail "no cgroup v2 hierarchy"
cg=$cgroot/ep-bench-$$
cg_base=$cgroot/ep-bench-$$-base # start_baseline's commander: a parent of its own, as the first has
bench_pids=()

bench_cleanup() {
        local rc=$? p
        set +e
        for p in "${bench_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
        for p in "${bench_pids[@]}"; do
                for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
                kill -KILL "$p" 2>/dev/null
                wait "$p" 2>/dev/null
        done
        for d in "$cg" "$cg_base"; do
                [[ -d $d ]] || continue
                echo 1 >"$d/cgroup.kill" 2>/dev/null
                for _ in $(seq 100); do grep -qs '^populated 0' "$d/cgroup.events" && break; sleep 0.05; done
                find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
                [[ -d $d ]] && echo "warning: could not remove $d" >&2
        done
        if [[ -n ${BENCH_KEEP:-} ]]; then
                mkdir -p "$BENCH_KEEP" && cp -r "$work/." "$BENCH_KEEP/" 2>/dev/null
                echo "# logs and configurations kept in $BENCH_KEEP"
        fi
        rm -rf "$work"
        exit $rc
}
trap bench_cleanup EXIT
trap 'exit 1' INT TERM

# make_parent DIR: a fresh cgroup with every controller the root hands down enabled for its children.
make_parent() {
        mkdir "$1"
        for c in $(cat "$cgroot/cgroup.subtree_control" 2>/dev/null); do
                echo "+$c" >"$1/cgroup.subtree_control" 2>/dev/null || true
        done
}
make_parent "$cg"

wait_for() { # wait_for SECONDS COMMAND...: polls every 50 ms
        local deadline=$((SECONDS + $1))
        shift
        until "$@" 2>/dev/null; do
                ((SECONDS < deadline)) || return 1
                sleep 0.05
        done
}
listening() { ss -Hltn "sport = :$1" | grep -q .; }
bg() { # bg LOG COMMAND...: starts it, sets $last_pid, remembers it for cleanup
        local log=$1
        shift
        "$@" >"$log" 2>&1 &
        last_pid=$!
        bench_pids+=("$last_pid")
}
# A process and its children (nginx's master and workers), space-separated.
proc_tree() {
        # shellcheck disable=SC2046 # one PID a word
        echo "$1" $(pgrep -P "$1" || true)
}
# "utime stime" summed over the given PIDs, in clock ticks (CLK_TCK).
cpu_ticks() {
        local p
        for p in "$@"; do cat "/proc/$p/stat" 2>/dev/null; done | sed 's/^.*) //' |
                awk '{ u += $12; s += $13 } END { print u + 0, s + 0 }'
}

# launch_commander NAME COMMANDER PORT CGROUP [FRONTEND_LINES]: a commander of this run (on the proxy CPU, in
# CGROUP, with $worker as its workers), ready; FRONTEND_LINES are more keys of its [frontend] section. Sets
# last_pid, last_sock (the reception's socket) and last_worker_pids (pinned to the load CPU with
# BENCH_PIN=1). Its log is $work/NAME.log.
launch_commander() {
        local name=$1 commander_bin=$2 port=$3 cgroup=$4 extra=${5:-} status_lines p
        cat >"$work/$name.conf" <<EOF
[worker]
exec = $worker --threads 2
[pool]
backend = cgroup
min_workers = $n_workers
max_workers = $n_workers
[frontend]
listen = 127.0.0.1:$port
$extra
EOF
        bg "$work/$name.log" "${on_proxy[@]}" bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cgroup" \
                "$commander_bin" --group "$name" --config "$work/$name.conf" --runtime-dir "$work/run-$name" \
                --state-dir "$work/state-$name"
        wait_for 30 grep -q "Ready: $n_workers workers routable" "$work/$name.log" ||
                { tail -n 20 "$work/$name.log" >&2; bench_fail "$name did not become ready"; }
        mapfile -t status_lines < <(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
ws=d["workers"]; print([w for w in ws if w["reception"]][0]["socket"]); print(" ".join(str(w["pid"]) for w in ws))' \
                "$work/run-$name/status.json")
        last_sock=${status_lines[0]}
        read -ra last_worker_pids <<<"${status_lines[1]}"
        if [[ $pin == 1 ]]; then
                for p in "${last_worker_pids[@]}"; do taskset -apc 1 "$p" >/dev/null; done
        fi
}

# Starts elastic-pool of this build; sets ep_pid, sock (the reception's socket, which nginx and HAProxy
# forward to) and worker_pids.
start_elastic_pool() {
        launch_commander bench "$commander" "$port_ep" "$cg" "${BENCH_FRONTEND:-}"
        ep_pid=$last_pid sock=$last_sock
        worker_pids=("${last_worker_pids[@]}")
}

# start_baseline BUILD_DIR [FRONTEND_LINES]: elastic-pool of another build (or of this one with other
# [frontend] keys) beside this one, in the same run: its own cgroup parent, directories and worker (this
# build's demo worker, so that only the commander differs), on $port_base_ep; sets base_pid,
# base_worker_pids and base_build.
start_baseline() {
        base_build=$(cd "$1" && pwd)
        [[ -x $base_build/daemon/elastic-pool ]] ||
                bench_fail "no $base_build/daemon/elastic-pool: build the baseline first"
        make_parent "$cg_base"
        launch_commander bench-base "$base_build/daemon/elastic-pool" "$port_base_ep" "$cg_base" "${2:-}"
        base_pid=$last_pid
        base_worker_pids=("${last_worker_pids[@]}")
}

# start_nginx NAME WORKER_PROCESSES H1_PORT H2_PORT [pin|float]: sets ngx_pid.
start_nginx() {
        local name=$1 dir=$work/$1
        mkdir -p "$dir"
        cat >"$dir.conf" <<EOF
worker_processes $2;
user root;
daemon off;
master_process on;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
        access_log off;
        client_body_temp_path $dir/body;
        proxy_temp_path $dir/proxy;
        fastcgi_temp_path $dir/fastcgi;
        uwsgi_temp_path $dir/uwsgi;
        scgi_temp_path $dir/scgi;
        keepalive_requests 100000000;
        keepalive_timeout 60s;
        upstream workers {
                server unix:$sock;
                keepalive $conns;
                keepalive_requests 100000000;
        }
        server {
                listen 127.0.0.1:$3;
                listen 127.0.0.1:$4 http2;
                location / {
                        proxy_pass http://workers;
                        proxy_http_version 1.1;
                        proxy_set_header Connection "";
                        proxy_set_header X-Forwarded-For \$remote_addr;
                        proxy_set_header X-Forwarded-Proto \$scheme;
                        proxy_set_header X-Request-Id \$request_id;
                }
        }
}
EOF
        local cpu=("${on_proxy[@]}")
        [[ ${5:-pin} == pin ]] || cpu=()
        bg "$dir.out" "${cpu[@]}" nginx -p "$dir" -e "$dir/error.log" -c "$dir.conf"
        ngx_pid=$last_pid
        wait_for 10 listening "$4" || { cat "$dir/error.log" "$dir.out" >&2; bench_fail "nginx ($name) did not start"; }
}

# start_haproxy H1_PORT H2_PORT [NAME [NBTHREAD [pin|float]]]: NAME (haproxy) names its files in $work;
# NBTHREAD 1 by default; sets hap_pid.
start_haproxy() {
        local name=${3:-haproxy} cpu=("${on_proxy[@]}")
        [[ ${5:-pin} == pin ]] || cpu=()
        cat >"$work/$name.cfg" <<EOF
global
        nbthread ${4:-1}
        maxconn 4096
defaults
        mode http
        timeout connect 5s
        timeout client 60s
        timeout server 60s
        option http-keep-alive
        http-reuse always
frontend fe
        bind 127.0.0.1:$1
        bind 127.0.0.1:$2 proto h2
        option forwardfor
        unique-id-format %{+X}o%ci%cp%fi%fp%Ts%rt%pid
        http-request set-header X-Request-Id %[unique-id]
        http-request set-header X-Forwarded-Proto http
        default_backend workers
backend workers
        server w unix@$sock
EOF
        bg "$work/$name.out" "${cpu[@]}" haproxy -db -f "$work/$name.cfg"
        hap_pid=$last_pid
        wait_for 10 listening "$2" || { cat "$work/$name.out" >&2; bench_fail "HAProxy ($name) did not start"; }
}

# start_nghttpx PORT: nghttpx (nghttp2-proxy) in front of the same worker socket, one event loop
# (--single-thread: its worker process runs everything in one thread), HTTP/1.1 and h2c on PORT, up to
# $conns keep-alive HTTP/1.1 connections to the worker (its default is 8); sets ngh_pid (the master:
# proc_tree adds its worker process). It adds X-Forwarded-For and X-Forwarded-Proto as the others do, and
# a fixed X-Request-Id: it has no per-request id without an mruby script, which would cost it more than
# the others pay for theirs.
start_nghttpx() {
        bg "$work/nghttpx.out" "${on_proxy[@]}" nghttpx --single-thread --workers=1 \
                --frontend="127.0.0.1,$1;no-tls" --backend="unix:$sock;;proto=http/1.1" \
                --backend-connections-per-host="$conns" --add-x-forwarded-for --no-via \
                --add-request-header="X-Request-Id: nghttpx-0000000000000000" --no-ocsp \
                --errorlog-file="$work/nghttpx.err" --pid-file="$work/nghttpx.pid" --conf=/dev/null
        ngh_pid=$last_pid
        wait_for 10 listening "$1" || { cat "$work/nghttpx.err" "$work/nghttpx.out" >&2; bench_fail "nghttpx did not start"; }
}

# The no-proxy ceiling: a second demo worker on TCP, on the load generator's CPU; sets direct_pid.
start_direct() {
        bg "$work/direct-worker.log" "${on_load[@]}" "$worker" --listen "127.0.0.1:$port_direct" --threads 2
        direct_pid=$last_pid
        wait_for 10 listening "$port_direct" || bench_fail "the direct worker did not start"
}

# check_get PORT [--http2-prior-knowledge]: GET / answers the demo worker's body.
check_get() {
        local body
        body=$(curl -sf ${2:+"$2"} "http://127.0.0.1:$1/") || bench_fail "GET / on port $1 ${2:-} failed"
        [[ $body == "Hello from elastic-pool-demo-worker" ]] || bench_fail "port $1 answered '$body'"
}

# Warnings and errors elastic-pool logged, for the closing lines of a run.
report_commander_log() {
        local warn
        kill -0 "$ep_pid" 2>/dev/null || echo "# elastic-pool DIED during the run"
        warn=$(grep -cE 'WARNING: |ERROR: |CRIT: |ALERT: |EMERG: ' "$work/bench.log" || true)
        echo "# elastic-pool log: $warn warning/error lines during the run$( ((warn > 0)) && echo '; the first ones:')"
        grep -E 'WARNING: |ERROR: |CRIT: |ALERT: |EMERG: ' "$work/bench.log" | head -n 10 | sed 's/^/#   /' || true
        # Two kinds are the benchmark's own doing, not the commander's: the peers' connections to the worker
        # it shares with them, which the commander did not open, and growth the fixed pool refuses.
        grep -q 'WARNING: \[drift ' "$work/bench.log" &&
                echo "#   [drift]: expected here, the worker also counts the peers' connections to its socket"
        grep -q 'scale-up refused: max_workers=' "$work/bench.log" &&
                echo "#   [refused] at max_workers: expected here, the pool is fixed at $n_workers worker(s) (BENCH_WORKERS)"
        return 0
}
