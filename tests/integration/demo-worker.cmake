# The demo worker, over HTTP with curl and raw sockets (tests/integration/demo-worker-*.sh).
foreach(t basics users work bodies pipelining bad-requests keepalive shutdown socket-activation channel
                install-error move-delays fault-options users-reannounce)
        ep_integration_test(demo-worker-${t}
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/demo-worker-${t}.sh TIMEOUT 120 LABELS demo)
endforeach()
