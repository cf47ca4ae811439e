# The [worker] runtime settings with real workers: environment=, environment_file=, working_directory=,
# user= seen in /proc of the workers, and a rolling reload on a changed environment file.
# tests/integration/worker-runtime*.sh
foreach(t runtime)
        ep_integration_test(worker-${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/worker-${t}.sh TIMEOUT 180
                LABELS "worker;rolling")
endforeach()
