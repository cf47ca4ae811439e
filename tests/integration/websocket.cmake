# WebSocket tunnels through the front end, with real clients (python3-websockets over HTTP/1.1, python3-h2
# with extended CONNECT over HTTP/2) and the demo worker's echo. tests/integration/websocket-*.sh
foreach(t moves ends)
        ep_integration_test(websocket-${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/websocket-${t}.sh TIMEOUT 180
                LABELS websocket frontend)
endforeach()
