# The front end's security fixes, end to end: what reaches a worker without an authority, logout
# revoking cookies, trust in Unix socket peers, the cookie key's mode and owner, and rate-limited error
# lines that still count what they leave out. tests/integration/frontend-sec-*.sh; each runs in seconds.
foreach(t
        missing-host logout-revokes trusted-unix cookie-key error-log-limit header-spoof cookie-group)
        ep_integration_test(frontend-sec-${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/frontend-sec-${t}.sh TIMEOUT 120
                LABELS frontend)
endforeach()
