# bench-spawn-latency: microsecond clocks for bench/spawn-latency.sh (kill -> replacement routable; N runs
# of a command such as systemd-run --user --scope true). Plain libc; never a test.
add_executable(bench-spawn-latency ${CMAKE_CURRENT_LIST_DIR}/spawn-latency.c)
target_link_libraries(bench-spawn-latency PRIVATE ep-shared)
ep_target_warnings(bench-spawn-latency)
ep_target_lto(bench-spawn-latency)
