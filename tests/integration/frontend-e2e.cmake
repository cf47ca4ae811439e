# The front end end to end, second set: listeners on two address families, sockets handed over by a
# socket-activating parent, the h2c upgrade with real clients, and the cap on requests that reset
# HTTP/2 streams leave running on workers. tests/integration/frontend-e2e-*.sh; each runs in seconds.
foreach(t
        listen-v4-v6 socket-activation h2c-upgrade h2-orphan-cap)
        ep_integration_test(frontend-e2e-${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/frontend-e2e-${t}.sh TIMEOUT 120
                LABELS frontend)
endforeach()
