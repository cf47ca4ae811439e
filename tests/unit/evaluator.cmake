# The interpreter and the judge: window, evaluator and policies. The fragments compile their sources
# directly (not ep-core) so these tests build while other daemon/*.c files are mid-edit.
ep_unit_test(window SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-window.c ${CMAKE_SOURCE_DIR}/daemon/window.c
        LIBS ep-shared ep-proto m)
target_include_directories(test-window PRIVATE ${CMAKE_SOURCE_DIR}/daemon)

ep_unit_test(evaluator SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-evaluator.c ${CMAKE_SOURCE_DIR}/daemon/evaluator.c
        ${CMAKE_SOURCE_DIR}/daemon/window.c LIBS ep-shared ep-proto m)
target_include_directories(test-evaluator PRIVATE ${CMAKE_SOURCE_DIR}/daemon)

ep_unit_test(policy SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-policy.c ${CMAKE_SOURCE_DIR}/daemon/policy.c
        ${CMAKE_SOURCE_DIR}/daemon/evaluator.c ${CMAKE_SOURCE_DIR}/daemon/window.c ${CMAKE_SOURCE_DIR}/daemon/rate.c
        LIBS ep-shared ep-proto m)
target_include_directories(test-policy PRIVATE ${CMAKE_SOURCE_DIR}/daemon)

ep_unit_test(rate SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-rate.c ${CMAKE_SOURCE_DIR}/daemon/rate.c
        ${CMAKE_SOURCE_DIR}/daemon/window.c LIBS ep-shared ep-proto m)
target_include_directories(test-rate PRIVATE ${CMAKE_SOURCE_DIR}/daemon)

ep_unit_test(burst SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-burst.c ${CMAKE_SOURCE_DIR}/daemon/burst.c
        ${CMAKE_SOURCE_DIR}/daemon/policy.c ${CMAKE_SOURCE_DIR}/daemon/evaluator.c ${CMAKE_SOURCE_DIR}/daemon/window.c
        ${CMAKE_SOURCE_DIR}/daemon/rate.c LIBS ep-shared ep-proto m)
target_include_directories(test-burst PRIVATE ${CMAKE_SOURCE_DIR}/daemon)
