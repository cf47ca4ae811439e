/* SPDX-License-Identifier: MIT */
/* What a request may name (daemon/frontend/request-check.c): the HTTP/1.1 side's rules for the target,
 * Host and scheme, which the HTTP/2 side applies to :path, :authority and :scheme. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "request-check.h"

#define S(s) s, sizeof(s) - 1

static void test_request_authority_valid_forms(void **state) {
        assert_true(request_authority_valid(S("")));
        assert_true(request_authority_valid(S("example.com")));
        assert_true(request_authority_valid(S("example.com:8080")));
        assert_true(request_authority_valid(S("192.0.2.1:80")));
        assert_true(request_authority_valid(S("[2001:db8::1]:443")));
        assert_true(request_authority_valid(S("xn--bcher-kva.example")));
}

static void test_request_authority_valid_refuses(void **state) {
        assert_false(request_authority_valid(S("user@example.com")));
        assert_false(request_authority_valid(S("example.com/path")));
        assert_false(request_authority_valid(S("example.com?q")));
        assert_false(request_authority_valid(S("exa mple.com")));
        assert_false(request_authority_valid(S("example.com:80x")));
        assert_false(request_authority_valid(S("example.com:123456")));
        assert_false(request_authority_valid(S("[2001:db8::1")));
        assert_false(request_authority_valid(S("[]")));
        assert_false(request_authority_valid(S("caf\xc3\xa9.example")));
        assert_false(request_authority_valid("a\0b", 3));
}

static void test_request_target_valid_forms(void **state) {
        assert_true(request_target_valid(S("/"), false));
        assert_true(request_target_valid(S("/a/b?c=d&e=%20"), false));
        assert_true(request_target_valid(S("/~user/!$'()*+,;=:@"), false));
        assert_true(request_target_valid(S("*"), true));
}

static void test_request_target_valid_refuses(void **state) {
        assert_false(request_target_valid(S(""), false));
        assert_false(request_target_valid(S("*"), false)); /* asterisk-form is for OPTIONS only */
        assert_false(request_target_valid(S("a/b"), false));
        assert_false(request_target_valid(S("http://example.com/"), false));
        assert_false(request_target_valid(S("/a b"), false));
        assert_false(request_target_valid(S("/a\tb"), false));
        assert_false(request_target_valid(S("/a#frag"), false));
        assert_false(request_target_valid(S("/caf\xc3\xa9"), false));
        assert_false(request_target_valid(S("/a\x7f"), false));
        assert_false(request_target_valid("/a\0b", 4, false));
}

static void test_request_scheme_valid_forms(void **state) {
        assert_true(request_scheme_valid(S("http")));
        assert_true(request_scheme_valid(S("https")));
        assert_true(request_scheme_valid(S("HTTPS")));
        assert_false(request_scheme_valid(S("")));
        assert_false(request_scheme_valid(S("ftp")));
        assert_false(request_scheme_valid(S("httpx")));
        assert_false(request_scheme_valid(S("http ")));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_request_authority_valid_forms),
                cmocka_unit_test(test_request_authority_valid_refuses),
                cmocka_unit_test(test_request_target_valid_forms),
                cmocka_unit_test(test_request_target_valid_refuses),
                cmocka_unit_test(test_request_scheme_valid_forms),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
