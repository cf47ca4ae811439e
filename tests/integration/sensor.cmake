# The sensor against real processes, sockets and cgroups.
set(_d ${CMAKE_CURRENT_LIST_DIR})

# Real cgroup v2 leaf, one child burning a core: timing-sensitive on a 2-core machine, so never in parallel.
# The name says which memory path it checks (a real memory.current, or the v1/procfs fallback).
foreach(mode memory-current memory-fallback)
        ep_integration_test(sensor-real-cgroup-cpu-${mode}
                COMMAND bash ${_d}/sensor-real-cgroup-cpu.sh ${mode} TIMEOUT 180 LABELS sensor cgroup)
        set_tests_properties(integration/sensor-real-cgroup-cpu-${mode} PROPERTIES RUN_SERIAL TRUE)
endforeach()

ep_integration_test(sensor-wrapper-listen-fds COMMAND bash ${_d}/sensor-wrapper-listen-fds.sh TIMEOUT 60 LABELS sensor)
ep_integration_test(sensor-wrapper-exit-status COMMAND bash ${_d}/sensor-wrapper-exit-status.sh TIMEOUT 60 LABELS sensor)
ep_integration_test(sensor-wrapper-app-fields-absent
        COMMAND bash ${_d}/sensor-wrapper-app-fields-absent.sh TIMEOUT 60 LABELS sensor)
ep_integration_test(sensor-library-exports COMMAND bash ${_d}/sensor-library-exports.sh TIMEOUT 60 LABELS sensor)
