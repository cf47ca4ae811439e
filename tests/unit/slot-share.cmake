# The clients' shares of a worker's slots and the order of its queue (daemon/frontend/slot-share.c), pure.
ep_unit_test(slot-share SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-slot-share.c
        ${CMAKE_SOURCE_DIR}/daemon/frontend/slot-share.c ${CMAKE_SOURCE_DIR}/daemon/hashmap.c LIBS ep-shared)
target_include_directories(test-slot-share PRIVATE ${CMAKE_SOURCE_DIR}/daemon ${CMAKE_SOURCE_DIR}/daemon/frontend)
