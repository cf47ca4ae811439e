# Compaction by live moves with real users: a real commander, real demo workers in cgroup v2 leaves, the
# users of tests/integration/compaction-users.py. tests/integration/compaction-*.sh
foreach(t 40-users)
        ep_integration_test(compaction-${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/compaction-${t}.sh TIMEOUT 120
                LABELS compaction)
        # the pool grows and shrinks on measured occupancy: alone on the machine
        set_tests_properties(integration/compaction-${t} PROPERTIES RUN_SERIAL TRUE)
endforeach()
# Relief moves with real users: a worker spawned because the others were full takes some of their users
# at once. tests/integration/relief-*.sh (users: tests/integration/relief-users.py); the script bounds
# itself to about 40 s, the CTest timeout is the backstop.
foreach(t growth)
        ep_integration_test(relief-${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/relief-${t}.sh TIMEOUT 90
                LABELS compaction relief)
        # scale-up and relief act on measured occupancy: alone on the machine
        set_tests_properties(integration/relief-${t} PROPERTIES RUN_SERIAL TRUE)
endforeach()
# Rolling reload with real users under load: 60 users, three reloads (same format, new format, a
# command that cannot start). tests/integration/rolling-*.sh (users: tests/integration/rolling-users.py)
foreach(t reload reload-require-compatible)
        ep_integration_test(rolling-${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/rolling-${t}.sh TIMEOUT 400
                LABELS compaction rolling)
        set_tests_properties(integration/rolling-${t} PROPERTIES RUN_SERIAL TRUE)
endforeach()
# Request-rate scaling: 1 -> 2 above rps_target, a missing measurement held (never read as 0), 2 -> 1 by
# compaction once reports resume. tests/integration/rps-*.sh
foreach(t scaling)
        ep_integration_test(rps-${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/rps-${t}.sh TIMEOUT 180
                LABELS compaction rps)
        set_tests_properties(integration/rps-${t} PROPERTIES RUN_SERIAL TRUE)
endforeach()
# The decision log: a recorded run replayed through the same policies (tests/integration/decision-*.sh)
foreach(t replay)
        ep_integration_test(decision-${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/decision-${t}.sh TIMEOUT 120
                LABELS compaction rps)
        set_tests_properties(integration/decision-${t} PROPERTIES RUN_SERIAL TRUE)
endforeach()
# The burst path: real overload grows the pool within seconds, a 1-s spike spawns nothing; users who all
# logged in at once are relieved on the burst path, so the pool grows past two workers.
# tests/integration/burst-*.sh
foreach(t growth relief)
        ep_integration_test(burst-${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/burst-${t}.sh TIMEOUT 180
                LABELS compaction burst)
        # judges saturation under real CPU load: alone on the machine
        set_tests_properties(integration/burst-${t} PROPERTIES RUN_SERIAL TRUE)
endforeach()
