# The fault soak in short (bench/fault-soak.sh with every fault once): real commander, demo workers,
# clients and faults in a fresh cgroup parent. Busy for about 90 s: alone on the machine, so that the
# clean windows are not disturbed by other tests' load.
ep_integration_test(fault-soak-short COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fault-soak-short.sh TIMEOUT 180 LABELS soak)
set_tests_properties(integration/fault-soak-short PROPERTIES RUN_SERIAL TRUE)
