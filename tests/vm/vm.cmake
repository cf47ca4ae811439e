# vm/system: the .debs of this tree in a throw-away Debian 12 guest with systemd as PID 1 on a pure
# cgroup v2 hierarchy (tests/vm/README.md): tests/vm/vm-system.sh builds the packages, tests/vm/ep-vm
# boots the guest, tests/vm/payload runs in it. EP_TEST_VM=0 skips it, EP_TEST_VM=full runs every step
# where the default would run the quick subset. It takes both cores (the packages' build, then the
# guest's two vCPUs): RUN_SERIAL keeps the timing-sensitive tests from running beside it. The timeout
# covers a first run that also builds the guest image (about 2.5 min) and a full payload under TCG.
add_test(NAME vm/system COMMAND ${CMAKE_CURRENT_LIST_DIR}/vm-system.sh)
set_tests_properties(vm/system PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 1200 LABELS "vm;system;packaging"
        RUN_SERIAL TRUE
        ENVIRONMENT "EP_BUILD_DIR=${CMAKE_BINARY_DIR};EP_SOURCE_DIR=${CMAKE_SOURCE_DIR};EP_SANITIZE=${EP_SANITIZE}")
