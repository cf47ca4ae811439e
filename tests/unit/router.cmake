# The front end's exchange, router and session (daemon/frontend/) with its lifecycle (frontend.c), on a
# Manager in memory (manager-fixture.c) whose placement answers it: a real Frontend without listeners,
# exchanges driven from the test. The clock is the fixture's (now_usec wrapped) and the journal is
# captured (log_internal wrapped), fields included.
ep_unit_test(router SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-router.c ${CMAKE_CURRENT_LIST_DIR}/manager-fixture.c
        LIBS ep-core)
target_link_options(test-router PRIVATE -Wl,--wrap=now_usec -Wl,--wrap=log_internal)
