# The commander's integration tests: real processes in cgroup v2 leaves under a fresh parent per test.
foreach(t scale-real-load worker-killed spawn-timeout garbage-frames hostile-frames exec-failure stop stale-hold check-config admin
                crash-after-ready runtime-dir-too-long leftover-children reload readopt nofile-short)
        ep_integration_test(commander-${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/commander-${t}.sh TIMEOUT 120)
endforeach()
# burns real CPU and judges occupancy from it: alone on the machine
set_tests_properties(integration/commander-scale-real-load PROPERTIES RUN_SERIAL TRUE)
# health: a hung worker (silent, or not answering) is taken out of new work, then replaced (tests/integration/health-*.sh)
foreach(t hung-reception unanswered slow-not-out)
        ep_integration_test(health-${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/health-${t}.sh TIMEOUT 120)
endforeach()
