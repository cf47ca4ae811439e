# CPU time per sensor tick; run bench/sensor-tick.sh (never a test: the figure is for people).
add_executable(bench-sensor-tick ${CMAKE_CURRENT_LIST_DIR}/sensor-tick.c)
target_link_libraries(bench-sensor-tick PRIVATE bench-span ep-sensor-core)
ep_target_warnings(bench-sensor-tick)
ep_target_lto(bench-sensor-tick)
