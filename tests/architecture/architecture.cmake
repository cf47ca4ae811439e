# The architecture, checked (docs/architecture.md): every file includes only headers of the layers its
# own may include, and the built objects have no cycle of calls between modules.
find_program(EP_PYTHON3 python3 REQUIRED)
add_test(NAME architecture/layering COMMAND ${EP_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/layering.py ${CMAKE_SOURCE_DIR})
add_test(NAME architecture/calls COMMAND ${EP_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/calls.py ${CMAKE_BINARY_DIR})
set_tests_properties(architecture/layering architecture/calls PROPERTIES SKIP_RETURN_CODE 77 LABELS architecture)
