# The commander's CPU per report through the real report path (decode, window, evaluator, capacity).
add_executable(bench-commander-report-cost ${CMAKE_CURRENT_LIST_DIR}/commander-report-cost.c)
target_link_libraries(bench-commander-report-cost PRIVATE bench-span ep-core)
ep_target_warnings(bench-commander-report-cost)
ep_target_lto(bench-commander-report-cost)
