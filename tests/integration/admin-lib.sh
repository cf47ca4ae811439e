# SPDX-License-Identifier: MIT
# Helpers of the admin listener's tests (tests/integration/admin-*.sh): a demo pool with its front end and
# the admin listener on loopback, curl against both, the test's output folder, a private D-Bus for the
# operator's moves, headless Chromium. Source after lib.sh, commander-lib.sh and frontend-lib.sh.

EP_ADMIN_PORT=$(free_port)
EP_ADMIN=http://127.0.0.1:$EP_ADMIN_PORT

# What a test leaves for a person to look at (a screenshot, the DOM, a scrape): kept after the test, in
# the build tree, one folder per test. EP_TEST_OUTPUT overrides it.
EP_TEST_OUTPUT=${EP_TEST_OUTPUT:-$EP_BUILD_DIR/test-output/$EP_TEST_NAME}
rm -rf "$EP_TEST_OUTPUT"
mkdir -p "$EP_TEST_OUTPUT"

# admin_curl PATH [CURL_ARGS...]: the admin listener's answer to GET PATH (fails on an HTTP error).
admin_curl() {
        local path=$1
        shift
        "${CURL[@]}" -f "$@" "$EP_ADMIN$path"
}

# admin_config EXEC [section.key=value...]: fe_config with the admin listener on $EP_ADMIN_PORT.
admin_config() {
        local exec=$1
        shift
        fe_config "$exec" "frontend.admin_listen=127.0.0.1:$EP_ADMIN_PORT" "$@"
}

# login USER: logs USER in through the front end, its cookie kept in $EP_TMP/jar-USER.
login() {
        "${CURL[@]}" -f -c "$EP_TMP/jar-$1" -o /dev/null "$EP_URL/login?user=$1" || fail "login of $1 failed"
}

# as_user USER PATH: a request of USER through the front end; prints the body.
as_user() {
        "${CURL[@]}" -f -b "$EP_TMP/jar-$1" "$EP_URL$2"
}

# monitor_json EXPR: a value of /_commander/monitor.json (EXPR in Python over d), e.g. 'd["ledger"]["n"]'.
monitor_json() {
        admin_curl /_commander/monitor.json | "$EP_PYTHON" -c 'import json, sys
d = json.load(sys.stdin)
print(eval(sys.argv[1]))' "$1"
}

# worker_users_are "w1=3 w2=2 w3=1": the commander places exactly these counts (monitor.json).
worker_users_are() {
        [[ $(monitor_json '" ".join("%s=%d" % (w["name"], w["users"]) for w in d["workers"])') == "$1" ]]
}

# chromium_run ARGS...: Debian's Chromium, headless, with a profile of the test's own and everything of
# its own that would go out switched off (the machine may have no network; the page must not need one).
chromium_run() {
        local profile
        profile=$(mktemp -d "$EP_TMP/chromium.XXXXXX")
        timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
                --disable-background-networking --disable-component-update --disable-sync \
                --disable-default-apps --disable-extensions --disable-domain-reliability --no-pings \
                --disable-client-side-phishing-detection --metrics-recording-only --password-store=basic \
                --user-data-dir="$profile" "$@"
}
