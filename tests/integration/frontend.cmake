# The front end, end to end: a real commander with its listener, real workers in cgroup v2 leaves, real
# clients (curl, nghttp, h2load, python3-h2). tests/integration/frontend-*.sh; each runs in seconds.
foreach(t
        sticky-h1 sticky-h2 sticky-nghttp forged-cookie user-header reserialize
        stream-h1 stream-h2 1000-connections
        h1-bad-input h1-slowloris idle-timeout short-body out-of-fds
        h2-big-headers h2-body-limit h2-floods h2-rapid-reset h2-flow-control h2-request-names
        h2-settings-timeout h2-stalled-client slow-body h2-reset-queued
        h1-reset-queued h1-slow-reader fair-share body-first
        no-worker-503 worker-killed response-timeout malformed-response no-replay
        live-move move-sole-worker
        sigterm-h1 sigterm-h2 sigterm-idle memory-after-burst batch io-uring)
        ep_integration_test(frontend-${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/frontend-${t}.sh TIMEOUT 120
                LABELS frontend)
endforeach()
# 1 GiB each way over HTTP/1.1: 6-11 s (plain and ASan); in the default suite, but labelled "slow" so that
# `ctest -LE slow` can leave it out
ep_integration_test(frontend-stream-1g COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/frontend-stream-1g.sh TIMEOUT 300
        LABELS "frontend;slow")
