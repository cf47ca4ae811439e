/* SPDX-License-Identifier: MIT */
/* The logging layer's stderr target: one line per entry ("HH:MM:SS.mmm ident@group: PREFIX[event wN]
 * message"), captured through a pipe dup2()'d over fd 2; the level filter and what the macros return;
 * %m naming the logged error; errno kept; level names and EP_LOG_LEVEL/EP_LOG_TARGET.
 *
 * The journal target needs a journald to read the entries back from; it is skipped (with the reason)
 * here and exercised by tests/system/ under a real systemd. */
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "log.h"

static int capture_fd = -EBADF, saved_stderr = -EBADF;

/* From here on fd 2 is a pipe; end_capture() puts the real stderr back and returns what was logged. */
static void begin_capture(void) {
        int p[2];

        fflush(stderr);
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
        assert_true(saved_stderr >= 0);
        assert_int_equal(dup2(p[1], STDERR_FILENO), STDERR_FILENO);
        safe_close(p[1]);
        capture_fd = p[0];
}

static char *end_capture(void) {
        char *buf = calloc(1, 65536);
        size_t have = 0;

        fflush(stderr);
        assert_int_equal(dup2(saved_stderr, STDERR_FILENO), STDERR_FILENO); /* closes the write end */
        saved_stderr = safe_close(saved_stderr);
        assert_non_null(buf);
        for (;;) {
                ssize_t n = read(capture_fd, buf + have, 65535 - have);
                if (n <= 0)
                        break;
                have += (size_t) n;
        }
        capture_fd = safe_close(capture_fd);
        return buf;
}

static void assert_matches(const char *s, const char *pattern) {
        regex_t re;
        int r;

        assert_int_equal(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
        r = regexec(&re, s, 0, NULL, 0);
        regfree(&re);
        if (r != 0)
                fail_msg("'%s' does not match /%s/", s, pattern);
}

static int setup(void **state) {
        unsetenv("EP_LOG_TARGET");
        unsetenv("EP_LOG_LEVEL");
        log_setup("test-log", "web");
        log_set_target(LOG_TARGET_STDERR);
        log_set_max_level(LOG_INFO);
        return 0;
}

static void test_log_level_from_string_names(void **state) {
        static const char *const names[] = { "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug" };

        for (int i = 0; i < 8; i++) {
                char digit[2] = { (char) ('0' + i), 0 };
                assert_int_equal(log_level_from_string(names[i]), i);
                assert_int_equal(log_level_from_string(digit), i);
        }
        assert_int_equal(log_level_from_string("error"), LOG_ERR);
        assert_int_equal(log_level_from_string("debug"), LOG_DEBUG);
}

static void test_log_level_from_string_invalid(void **state) {
        static const char *const bad[] = { "", "8", "9", "-1", "07", "10", "warn", "Info", "DEBUG", " info", "info ",
                                           "infos", "e" };

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
                assert_int_equal(log_level_from_string(bad[i]), -EINVAL);
}

static void test_log_stderr_line_format(void **state) {
        _cleanup_free_ char *out = NULL;

        begin_capture();
        log_info("plain %d", 42);
        out = end_capture();
        assert_matches(out, "^[0-2][0-9]:[0-5][0-9]:[0-6][0-9]\\.[0-9]{3} test-log@web: plain 42\n$");
}

static void test_log_stderr_fields_and_prefix(void **state) {
        _cleanup_free_ char *out = NULL;
        int r;

        begin_capture();
        r = log_struct(LOG_WARNING, LOG_FIELDS(.event = "spawn", .worker = 3, .user = "alice"), "Spawned %s", "w3");
        log_struct(LOG_ERR, LOG_FIELDS(.event = "held"), "Held");
        log_struct(LOG_NOTICE, LOG_FIELDS(.worker = 5), "no event, no tag");
        log_struct(LOG_CRIT, NULL, "crit");
        log_struct(LOG_ALERT, NULL, "alert");
        log_struct(LOG_EMERG, NULL, "emerg");
        out = end_capture();
        assert_int_equal(r, 0);
        assert_matches(out, "^[0-9:.]{12} test-log@web: WARNING: \\[spawn w3\\] Spawned w3\n"
                            "[0-9:.]{12} test-log@web: ERROR: \\[held\\] Held\n"
                            "[0-9:.]{12} test-log@web: no event, no tag\n"
                            "[0-9:.]{12} test-log@web: CRIT: crit\n"
                            "[0-9:.]{12} test-log@web: ALERT: alert\n"
                            "[0-9:.]{12} test-log@web: EMERG: emerg\n$");
}

static void test_log_errno_returns_and_names(void **state) {
        _cleanup_free_ char *out = NULL;
        int r1, r2, r3;

        begin_capture();
        errno = EAGAIN;
        r1 = log_error_errno(ENOENT, "open: %m");
        assert_int_equal(errno, EAGAIN); /* %m named the logged error, errno itself is kept */
        r2 = log_warning_errno(-EPERM, "negative works too: %m");
        r3 = log_oom();
        out = end_capture();
        assert_int_equal(r1, -ENOENT);
        assert_int_equal(r2, -EPERM);
        assert_int_equal(r3, -ENOMEM);
        assert_non_null(strstr(out, "ERROR: open: No such file or directory\n"));
        assert_non_null(strstr(out, "WARNING: negative works too: Operation not permitted\n"));
        assert_non_null(strstr(out, "ERROR: Out of memory.\n"));
}

static void test_log_max_level_filters(void **state) {
        _cleanup_free_ char *out = NULL;
        int r;

        log_set_max_level(LOG_NOTICE);
        assert_int_equal(log_get_max_level(), LOG_NOTICE);
        begin_capture();
        assert_int_equal(log_info("dropped"), 0);
        r = log_debug_errno(EIO, "dropped too");
        log_notice("kept");
        out = end_capture();
        log_set_max_level(LOG_INFO);
        /* a filtered entry still returns the error, so "return log_debug_errno(r, ...)" works */
        assert_int_equal(r, -EIO);
        assert_null(strstr(out, "dropped"));
        assert_non_null(strstr(out, "kept"));
}

static void test_log_struct_filtered_by_level(void **state) {
        _cleanup_free_ char *out = NULL;
        int r;

        /* structured entries honour the level too (--log-level=warning drops the info events) */
        log_set_max_level(LOG_WARNING);
        begin_capture();
        log_struct(LOG_INFO, LOG_FIELDS(.event = "spawn", .worker = 1), "info event dropped");
        r = log_struct_errno(LOG_DEBUG, ENOSPC, LOG_FIELDS(.event = "held"), "debug event dropped");
        log_struct(LOG_WARNING, LOG_FIELDS(.event = "death", .worker = 2), "warning event kept");
        out = end_capture();
        log_set_max_level(LOG_INFO);
        assert_int_equal(r, -ENOSPC);
        assert_null(strstr(out, "dropped"));
        assert_non_null(strstr(out, "WARNING: [death w2] warning event kept\n"));
}

static void test_log_long_message_truncated(void **state) {
        _cleanup_free_ char *out = NULL, *big = malloc(10000);

        assert_non_null(big);
        memset(big, 'x', 9999);
        big[9999] = 0;
        begin_capture();
        log_info("%s", big);
        out = end_capture();
        /* one line, cut at the 4 KiB formatting buffer */
        assert_non_null(strchr(out, '\n'));
        assert_int_equal(strchr(out, '\n')[1], 0);
        assert_true(strlen(out) < 4096 + 64);
        assert_true(strlen(out) > 4000);
}

static void test_log_setup_environment(void **state) {
        _cleanup_free_ char *out = NULL;

        setenv("EP_LOG_LEVEL", "debug", 1);
        log_setup("other", NULL);
        assert_int_equal(log_get_max_level(), LOG_DEBUG);
        setenv("EP_LOG_LEVEL", "loud", 1); /* invalid: ignored, the level stays */
        log_setup("other", NULL);
        assert_int_equal(log_get_max_level(), LOG_DEBUG);
        setenv("EP_LOG_TARGET", "stderr", 1);
        log_setup("other", NULL);
        begin_capture();
        log_debug("no group");
        out = end_capture();
        assert_matches(out, "^[0-9:.]{12} other: no group\n$");
        unsetenv("EP_LOG_LEVEL");
        unsetenv("EP_LOG_TARGET");
        setup(state);
}

static void test_log_journal_target(void **state) {
        /* the entry would go to journald, and reading it back needs sd-journal on a running journald;
         * tests/system/ checks the EP_* fields there */
        if (access("/run/systemd/journal/socket", F_OK) < 0) {
                print_message("SKIP: journal target: no journald here (/run/systemd/journal/socket missing)\n");
                skip();
        }
        log_set_target(LOG_TARGET_JOURNAL);
        assert_int_equal(log_struct_errno(LOG_DEBUG, EIO, LOG_FIELDS(.event = "test", .worker = 1, .user = "u",
                                                                       .has_occupancy = true, .occupancy = 0.5,
                                                                       .extra = "EP_A=1\nEP_B=2"),
                                          "unit test entry: %m"),
                         -EIO);
        log_set_target(LOG_TARGET_STDERR);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_log_level_from_string_names),
                cmocka_unit_test(test_log_level_from_string_invalid),
                cmocka_unit_test_setup(test_log_stderr_line_format, setup),
                cmocka_unit_test_setup(test_log_stderr_fields_and_prefix, setup),
                cmocka_unit_test_setup(test_log_errno_returns_and_names, setup),
                cmocka_unit_test_setup(test_log_max_level_filters, setup),
                cmocka_unit_test_setup(test_log_struct_filtered_by_level, setup),
                cmocka_unit_test_setup(test_log_long_message_truncated, setup),
                cmocka_unit_test_setup(test_log_setup_environment, setup),
                cmocka_unit_test_setup(test_log_journal_target, setup),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
