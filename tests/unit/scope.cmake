# The scope backend against a fake systemd manager on a socketpair bus.
ep_unit_test(scope SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-scope.c LIBS ep-core Threads::Threads)
