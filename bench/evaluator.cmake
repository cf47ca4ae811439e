# bench-report-cost: the commander's CPU per OccupancyReport with 1 000 synthetic workers (decode, archive,
# evaluate, capacity checks). A benchmark, never a test: run it by hand on a quiet machine.
# Compiles the evaluator/policy sources directly, like their unit tests, not ep-core.
add_executable(bench-report-cost ${CMAKE_CURRENT_LIST_DIR}/report-cost.c ${CMAKE_SOURCE_DIR}/daemon/window.c
        ${CMAKE_SOURCE_DIR}/daemon/evaluator.c ${CMAKE_SOURCE_DIR}/daemon/policy.c)
target_include_directories(bench-report-cost PRIVATE ${CMAKE_SOURCE_DIR}/daemon)
target_link_libraries(bench-report-cost PRIVATE bench-span ep-shared ep-proto m)
ep_target_warnings(bench-report-cost)
ep_target_lto(bench-report-cost)
