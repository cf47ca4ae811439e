# The commander's own modules, one test binary each (unit/<module>). They link the libraries the
# commander is built from (ep-shared, ep-core) rather than recompiling its sources.

# shared/: the helpers every part of the tree links.
foreach(m parse-util time-util log)
        ep_unit_test(${m} SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-${m}.c LIBS ep-shared)
endforeach()
ep_unit_test(fd-util SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-fd-util.c LIBS ep-shared Threads::Threads)

# daemon/: the commander's modules, against ep-core.
ep_unit_test(hashmap SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-hashmap.c LIBS ep-core)
ep_unit_test(cgroup SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-cgroup.c LIBS ep-core Threads::Threads)
ep_unit_test(spawn SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-spawn.c LIBS ep-core)
ep_unit_test(channel SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-channel.c LIBS ep-core)
ep_unit_test(channel-listener SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-channel-listener.c LIBS ep-core)
ep_unit_test(decision-log SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-decision-log.c LIBS ep-core)
ep_unit_test(sockdiag SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-sockdiag.c LIBS ep-core)
ep_unit_test(cookie SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-cookie.c LIBS ep-core)
ep_unit_test(surface SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-surface.c LIBS ep-core)
ep_unit_test(open-requests SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-open-requests.c LIBS ep-core)
ep_unit_test(move SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-move.c LIBS ep-core)
ep_unit_test(spawn-throttle SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-spawn-throttle.c LIBS ep-core)
ep_unit_test(trim-schedule SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-trim-schedule.c LIBS ep-core)

# A Manager in memory with Worker objects on open channels and no processes (manager-fixture.c). The
# commander reads CLOCK_MONOTONIC through now_usec(): wrapped at link time, the tests drive the clock.
foreach(m pool capacity capacity-burst status placement compaction relief reload rollout health)
        ep_unit_test(${m} SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-${m}.c ${CMAKE_CURRENT_LIST_DIR}/manager-fixture.c
                LIBS ep-core)
        target_link_options(test-${m} PRIVATE -Wl,--wrap=now_usec)
endforeach()
