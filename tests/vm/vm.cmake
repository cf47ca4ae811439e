# vm/system: the .debs of this tree in a throw-away Debian 12 guest with systemd as PID 1 on a pure
# cgroup v2 hierarchy (tests/vm/README.md): tests/vm/vm-system.sh takes packaging/deb-rpm's packages,
# tests/vm/ep-vm boots the guest, tests/vm/payload runs in it. EP_TEST_VM=0 skips it, EP_TEST_VM=full
# runs every step where the default would run the quick subset. It takes both cores (the guest's two
# vCPUs): RUN_SERIAL keeps the timing-sensitive tests from running beside it. The timeout covers a run
# that also builds the guest image (when the cache is off) and a full payload under TCG.
#
# vm/image builds the guest image first, beside the other tests: its minutes are mostly the Debian
# mirror's, and inside vm/system they kept one core idle (RUN_SERIAL). The fixture makes vm/system wait
# for it (and `ctest -R vm/system` run it too); its COST starts it before the rest on a first run, when
# CTest knows no test's time yet. The packages are packaging/deb-rpm's (the fixture "packages"), so
# they are built once in the suite.
add_test(NAME vm/image COMMAND ${CMAKE_CURRENT_LIST_DIR}/vm-image.sh)
set_tests_properties(vm/image PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900 LABELS "vm;system;packaging"
        FIXTURES_SETUP vm-image COST 10000
        ENVIRONMENT "EP_BUILD_DIR=${CMAKE_BINARY_DIR};EP_SOURCE_DIR=${CMAKE_SOURCE_DIR};EP_SANITIZE=${EP_SANITIZE}")
add_test(NAME vm/system COMMAND ${CMAKE_CURRENT_LIST_DIR}/vm-system.sh)
set_tests_properties(vm/system PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 1200 LABELS "vm;system;packaging"
        RUN_SERIAL TRUE FIXTURES_REQUIRED "vm-image;packages"
        ENVIRONMENT "EP_BUILD_DIR=${CMAKE_BINARY_DIR};EP_SOURCE_DIR=${CMAKE_SOURCE_DIR};EP_SANITIZE=${EP_SANITIZE}")
