# What a request may name, shared by the HTTP/1.1 and HTTP/2 sides (daemon/frontend/request-check.c), pure.
ep_unit_test(request-check SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-request-check.c
        ${CMAKE_SOURCE_DIR}/daemon/frontend/request-check.c)
target_include_directories(test-request-check PRIVATE ${CMAKE_SOURCE_DIR}/daemon/frontend)
