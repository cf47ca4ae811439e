/* SPDX-License-Identifier: MIT */
/* The sticky cookie: sign/verify round trips (every base64url tail length, the longest user with the
 * longest expiry and stamp in a buffer of exactly COOKIE_VALUE_MAX), forged, re-spelled and expired
 * values, the earlier format without an issue stamp, a table of malformed ones, cookie_find() over
 * several Cookie fields with any spacing; the key file (created 0600 with 32 random bytes whatever the
 * umask, read back, refused at any other size, with group or other access or another owner, one whole key
 * for commanders starting together); logouts (stamps, what a logout voids, expiry, the cap). */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "cookie.h"
#include "fd-util.h"
#include "macro.h"

#define NOW 1700000000ULL
/* an issue stamp: microseconds, a little before NOW */
#define ISSUED 1699999990123456ULL

static CookieKey key, other_key;

static int setup(void **state) {
        for (unsigned i = 0; i < COOKIE_KEY_SIZE; i++) {
                key.key[i] = (uint8_t) (i * 13 + 1);
                other_key.key[i] = (uint8_t) (i * 13 + 2);
        }
        return 0;
}

static int verify(const CookieKey *k, const char *value, uint64_t now, char user[static COOKIE_USER_MAX + 1]) {
        return cookie_verify(k, value, strlen(value), now, user, COOKIE_USER_MAX + 1, NULL);
}

static uint64_t verify_issued(const CookieKey *k, const char *value, uint64_t now) {
        char user[COOKIE_USER_MAX + 1];
        uint64_t issued = UINT64_MAX;

        assert_int_equal(cookie_verify(k, value, strlen(value), now, user, sizeof user, &issued), 0);
        return issued;
}

static void round_trip(const char *user, uint64_t expires) {
        char buf[COOKIE_VALUE_MAX], got[COOKIE_USER_MAX + 1];
        int n = cookie_sign(&key, user, ISSUED, expires, buf, sizeof buf);

        assert_true(n > 0);
        assert_int_equal((size_t) n, strlen(buf));
        /* base64url alphabet only, no padding, and the two dots */
        assert_int_equal(strspn(buf, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."), (size_t) n);
        assert_null(strchr(buf, '='));
        assert_int_equal(verify(&key, buf, expires - 1, got), 0);
        assert_string_equal(got, user);
        assert_int_equal(verify_issued(&key, buf, expires - 1), ISSUED);
}

static void test_cookie_sign_verify_round_trip(void **state) {
        char buf[COOKIE_VALUE_MAX];

        round_trip("alice", NOW + 3600);
        round_trip("u", NOW + 1);
        round_trip("user@example.org", NOW + 7 * 86400);
        round_trip("Élodie ☃", NOW + 10);
        /* the exact value: user, expiry, issue stamp and MAC in that order */
        assert_true(cookie_sign(&key, "alice", ISSUED, 1800000000, buf, sizeof buf) > 0);
        assert_memory_equal(buf, "YWxpY2U.1800000000.1699999990123456.", 36);
        assert_int_equal(strlen(buf + 36), 43); /* 32 MAC bytes, unpadded */
        /* any stamp survives the trip, 0 and the largest included */
        assert_true(cookie_sign(&key, "alice", 0, NOW + 60, buf, sizeof buf) > 0);
        assert_int_equal(verify_issued(&key, buf, NOW), 0);
        assert_true(cookie_sign(&key, "alice", UINT64_MAX, NOW + 60, buf, sizeof buf) > 0);
        assert_int_equal(verify_issued(&key, buf, NOW), UINT64_MAX);
}

static void test_cookie_key_bind_groups_apart(void **state) {
        CookieKey web = key, shop = key, web_again = key;
        char buf[COOKIE_VALUE_MAX], got[COOKIE_USER_MAX + 1];

        assert_int_equal(cookie_key_bind(&web, "web"), 0);
        assert_int_equal(cookie_key_bind(&shop, "shop"), 0);
        assert_int_equal(cookie_key_bind(&web_again, "web"), 0);
        /* a function of the file's key and the group alone: a restart derives the same key */
        assert_memory_equal(web.key, web_again.key, COOKIE_KEY_SIZE);
        assert_memory_not_equal(web.key, shop.key, COOKIE_KEY_SIZE);
        assert_memory_not_equal(web.key, key.key, COOKIE_KEY_SIZE);
        /* a cookie of one group is a forgery to the other, and to the unbound file key */
        assert_true(cookie_sign(&web, "alice", ISSUED, NOW + 60, buf, sizeof buf) > 0);
        assert_int_equal(verify(&web, buf, NOW, got), 0);
        assert_int_equal(verify(&shop, buf, NOW, got), -EBADMSG);
        assert_int_equal(verify(&key, buf, NOW, got), -EBADMSG);
}

static void test_cookie_sign_base64url_edge_lengths(void **state) {
        char user[16];

        /* every remainder mod 3, so every tail length (0, 2 and 3 characters) */
        for (size_t len = 1; len < sizeof user; len++) {
                for (size_t i = 0; i < len; i++)
                        user[i] = (char) ('a' + i);
                user[len] = 0;
                round_trip(user, NOW + 60);
        }
        /* bytes that encode to '-' and '_', the two characters base64url changed */
        round_trip("\xfb\xff\xbf", NOW + 60);
        round_trip("\xfb\xff", NOW + 60);
        round_trip("\xff", NOW + 60);
}

static void test_cookie_sign_user_of_256(void **state) {
        char user[COOKIE_USER_MAX + 2], got[COOKIE_USER_MAX + 1];
        /* exactly COOKIE_VALUE_MAX on the heap: ASan sees a single byte written past it */
        _cleanup_free_ char *buf = malloc(COOKIE_VALUE_MAX);
        int n;

        assert_non_null(buf);
        memset(user, 'x', COOKIE_USER_MAX);
        user[COOKIE_USER_MAX] = 0;
        /* the longest value there is: 256 bytes of user, a 20-digit expiry and a 20-digit issue stamp (it
         * overran a 400-byte COOKIE_VALUE_MAX by 7 bytes, reachable with a large cookie_max_age) */
        n = cookie_sign(&key, user, UINT64_MAX, UINT64_MAX, buf, COOKIE_VALUE_MAX);
        assert_int_equal(n, 342 + 1 + 20 + 1 + 20 + 1 + 43);
        assert_true(n < COOKIE_VALUE_MAX);
        assert_int_equal(cookie_verify(&key, buf, (size_t) n, NOW, got, sizeof got, NULL), 0);
        assert_string_equal(got, user);
        /* and the common case of a 10-digit expiry */
        round_trip(user, NOW + 60);

        user[COOKIE_USER_MAX] = 'x';
        user[COOKIE_USER_MAX + 1] = 0;
        assert_int_equal(cookie_sign(&key, user, ISSUED, NOW, buf, COOKIE_VALUE_MAX), -EINVAL);
        assert_int_equal(cookie_sign(&key, "", ISSUED, NOW, buf, COOKIE_VALUE_MAX), -EINVAL);
        assert_int_equal(cookie_sign(&key, "alice", ISSUED, NOW, buf, COOKIE_VALUE_MAX - 1), -ENOBUFS);

        /* a user buffer too small for what the cookie carries is a refusal, not an overrun */
        user[COOKIE_USER_MAX] = 0;
        n = cookie_sign(&key, user, ISSUED, NOW + 60, buf, COOKIE_VALUE_MAX);
        assert_int_equal(cookie_verify(&key, buf, (size_t) n, NOW, got, 100, NULL), -EBADMSG);
}

static void test_cookie_verify_forged(void **state) {
        char buf[COOKIE_VALUE_MAX], forged[COOKIE_VALUE_MAX], got[COOKIE_USER_MAX + 1];
        char *mac;

        assert_true(cookie_sign(&key, "alice", ISSUED, NOW + 60, buf, sizeof buf) > 0);
        mac = strrchr(buf, '.') + 1;

        /* every single character of the MAC flipped to another valid one */
        for (size_t i = 0; mac[i]; i++) {
                strcpy(forged, buf);
                char *c = forged + (mac - buf) + i;
                *c = *c == 'A' ? 'B' : 'A';
                assert_int_equal(verify(&key, forged, NOW, got), -EBADMSG);
        }
        /* another user under alice's MAC */
        strcpy(forged, buf);
        memcpy(forged, "Ym9i", 4); /* "bob" */
        memmove(forged + 4, forged + 7, strlen(forged + 7) + 1);
        assert_int_equal(verify(&key, forged, NOW, got), -EBADMSG);
        /* a later expiry under the old MAC */
        strcpy(forged, buf);
        forged[8] = (char) (forged[8] == '9' ? '8' : '9');
        assert_int_equal(verify(&key, forged, NOW, got), -EBADMSG);
        /* a later issue stamp under the old MAC: a cookie cannot be made younger than a logout */
        strcpy(forged, buf);
        char *stamp = strchr(forged + 8, '.') + 1;
        *stamp = (char) (*stamp == '9' ? '8' : '9');
        assert_int_equal(verify(&key, forged, NOW, got), -EBADMSG);
        /* the stamp cut out, leaving the earlier format, under the same MAC */
        snprintf(forged, sizeof forged, "%.*s%s", (int) (strchr(buf + 8, '.') - buf), buf, mac - 1);
        assert_int_equal(verify(&key, forged, NOW, got), -EBADMSG);
        /* the key of another group */
        assert_int_equal(verify(&other_key, buf, NOW, got), -EBADMSG);
        assert_int_equal(verify(&key, buf, NOW, got), 0);
}

static void test_cookie_verify_mac_spelled_once(void **state) {
        char buf[COOKIE_VALUE_MAX], got[COOKIE_USER_MAX + 1];
        size_t n;
        char *last;

        assert_true(cookie_sign(&key, "alice", ISSUED, NOW + 60, buf, sizeof buf) > 0);
        n = strlen(buf);
        last = buf + n - 1;
        /* 43 characters carry 258 bits for 256: the last one's 2 low bits encode nothing. Setting them
         * spells the same MAC differently; only the canonical spelling is accepted. */
        static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        int v = (int) (strchr(alphabet, *last) - alphabet);
        assert_int_equal(v & 3, 0);
        for (int low = 1; low < 4; low++) {
                char copy[COOKIE_VALUE_MAX];
                strcpy(copy, buf);
                copy[n - 1] = alphabet[v | low];
                assert_int_equal(verify(&key, copy, NOW, got), -EBADMSG);
        }
        assert_int_equal(verify(&key, buf, NOW, got), 0);
}

static void test_cookie_verify_expired(void **state) {
        char buf[COOKIE_VALUE_MAX], got[COOKIE_USER_MAX + 1];

        assert_true(cookie_sign(&key, "alice", ISSUED, NOW, buf, sizeof buf) > 0);
        assert_int_equal(verify(&key, buf, NOW - 1, got), 0);
        assert_int_equal(verify(&key, buf, NOW, got), -ETIME); /* valid until, not through, expiry */
        assert_int_equal(verify(&key, buf, NOW + 1000, got), -ETIME);
        /* only a genuine cookie is told apart as expired: a forged old one is just bad */
        assert_int_equal(verify(&other_key, buf, NOW + 1000, got), -EBADMSG);
        assert_true(cookie_sign(&key, "alice", ISSUED, 0, buf, sizeof buf) > 0);
        assert_int_equal(verify(&key, buf, 0, got), -ETIME);
}

/* A value with a correct MAC over whatever prefix the test chooses (the key is known here). */
static void sign_raw(const char *prefix, char *out, size_t size) {
        static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        uint8_t m[32];
        unsigned mlen = 0;
        size_t o;

        assert_non_null(HMAC(EVP_sha256(), key.key, sizeof key.key, (const uint8_t *) prefix, strlen(prefix), m, &mlen));
        assert_int_equal(mlen, 32);
        o = (size_t) snprintf(out, size, "%s.", prefix);
        for (size_t i = 0; i < 32; i += 3) {
                uint32_t v = (uint32_t) m[i] << 16 | (i + 1 < 32 ? (uint32_t) m[i + 1] << 8 : 0) |
                             (i + 2 < 32 ? m[i + 2] : 0);
                out[o++] = alphabet[(v >> 18) & 63];
                out[o++] = alphabet[(v >> 12) & 63];
                if (i + 1 < 32)
                        out[o++] = alphabet[(v >> 6) & 63];
                if (i + 2 < 32)
                        out[o++] = alphabet[v & 63];
        }
        out[o] = 0;
}

static void test_cookie_verify_signed_but_malformed(void **state) {
        char buf[COOKIE_VALUE_MAX], got[COOKIE_USER_MAX + 1];

        sign_raw("YWxpY2U.1800000000.1699999990123456", buf, sizeof buf);
        assert_int_equal(verify(&key, buf, NOW, got), 0); /* the helper signs like cookie_sign() */
        assert_string_equal(got, "alice");
        assert_int_equal(verify_issued(&key, buf, NOW), ISSUED);
        /* the earlier format, without an issue stamp: still alice, issued at 0 (before any logout) */
        sign_raw("YWxpY2U.1800000000", buf, sizeof buf);
        assert_int_equal(verify(&key, buf, NOW, got), 0);
        assert_string_equal(got, "alice");
        assert_int_equal(verify_issued(&key, buf, NOW), 0);

        /* well signed, still refused: an empty, non-numeric or overflowing stamp, a fifth part */
        sign_raw("YWxpY2U.1800000000.", buf, sizeof buf);
        assert_int_equal(verify(&key, buf, NOW, got), -EBADMSG);
        sign_raw("YWxpY2U.1800000000.12x", buf, sizeof buf);
        assert_int_equal(verify(&key, buf, NOW, got), -EBADMSG);
        sign_raw("YWxpY2U.1800000000.18446744073709551616", buf, sizeof buf);
        assert_int_equal(verify(&key, buf, NOW, got), -EBADMSG);
        sign_raw("YWxpY2U.1800000000.12.34", buf, sizeof buf);
        assert_int_equal(verify(&key, buf, NOW, got), -EBADMSG);
        sign_raw("YWxpY2U..12", buf, sizeof buf);
        assert_int_equal(verify(&key, buf, NOW, got), -EBADMSG);

        /* well signed, still refused: a NUL inside the user, an empty user, a user that is no
         * base64url, an expiry past 2^64 - 1 */
        sign_raw("AGJvYg.1800000000", buf, sizeof buf); /* "\0bob" */
        assert_int_equal(verify(&key, buf, NOW, got), -EBADMSG);
        sign_raw(".1800000000", buf, sizeof buf);
        assert_int_equal(verify(&key, buf, NOW, got), -EBADMSG);
        sign_raw("a+b/.1800000000", buf, sizeof buf);
        assert_int_equal(verify(&key, buf, NOW, got), -EBADMSG);
        sign_raw("YWxpY2U.18446744073709551616", buf, sizeof buf);
        assert_int_equal(verify(&key, buf, NOW, got), -EBADMSG);
        sign_raw("YWxpY2U.18446744073709551615", buf, sizeof buf);
        assert_int_equal(verify(&key, buf, NOW, got), 0);
        sign_raw("YWxpY2U.99999999999999999999", buf, sizeof buf);
        assert_int_equal(verify(&key, buf, NOW, got), -EBADMSG);
        /* "alice" spelled with the unused low bits of its last character set: one spelling only */
        sign_raw("YWxpY2V.1800000000", buf, sizeof buf);
        assert_int_equal(verify(&key, buf, NOW, got), -EBADMSG);
}

static void test_cookie_verify_malformed_table(void **state) {
        char good[COOKIE_VALUE_MAX], got[COOKIE_USER_MAX + 1], long_value[COOKIE_VALUE_MAX + 8];
        const char *mac;

        assert_true(cookie_sign(&key, "alice", ISSUED, NOW + 60, good, sizeof good) > 0);
        mac = strrchr(good, '.') + 1;

        char v[32][COOKIE_VALUE_MAX + 8];
        size_t n = 0;
        snprintf(v[n++], sizeof v[0], "%s", "");
        snprintf(v[n++], sizeof v[0], "%s", "alice");
        snprintf(v[n++], sizeof v[0], "%s", "YWxpY2U");
        snprintf(v[n++], sizeof v[0], "%s", "YWxpY2U.");
        snprintf(v[n++], sizeof v[0], "%s", "YWxpY2U.123");
        snprintf(v[n++], sizeof v[0], "%s", "YWxpY2U..");
        snprintf(v[n++], sizeof v[0], "YWxpY2U..%s", mac);                 /* no expiry */
        snprintf(v[n++], sizeof v[0], "YWxpY2U.17000000x0.%s", mac);       /* not digits */
        snprintf(v[n++], sizeof v[0], "YWxpY2U.-1.%s", mac);
        snprintf(v[n++], sizeof v[0], "YWxpY2U. 1700000060.%s", mac);
        snprintf(v[n++], sizeof v[0], "%.*s", (int) strlen(good) - 1, good); /* MAC one short */
        snprintf(v[n++], sizeof v[0], "%sA", good);                         /* one long */
        snprintf(v[n++], sizeof v[0], "%s=", good);                         /* padded */
        snprintf(v[n++], sizeof v[0], "%s.", good);                         /* a fourth dot */
        snprintf(v[n++], sizeof v[0], "YWxpY2U.1700000060..%s", mac);       /* no issue stamp */
        snprintf(v[n++], sizeof v[0], "YWxpY2U.1700000060.1.2.%s", mac);    /* two of them */
        snprintf(v[n++], sizeof v[0], "YWxpY2U.1700000060. 1.%s", mac);
        snprintf(v[n++], sizeof v[0], "%.*s+%s", (int) (mac - good), good, mac + 1); /* standard base64 */
        snprintf(v[n++], sizeof v[0], "Y.1700000060.%s", mac);              /* a user of 1 character */
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(verify(&key, v[i], NOW, got), -EBADMSG);
        }

        /* the length is checked before anything is parsed */
        memset(long_value, 'A', sizeof long_value - 1);
        long_value[sizeof long_value - 1] = 0;
        assert_int_equal(cookie_verify(&key, long_value, COOKIE_VALUE_MAX, NOW, got, sizeof got, NULL),
                         -EBADMSG);
        /* len is honoured: the value need not be NUL-terminated, a good one cut short is bad */
        assert_int_equal(cookie_verify(&key, good, strlen(good) - 5, NOW, got, sizeof got, NULL), -EBADMSG);
        assert_int_equal(cookie_verify(&key, good, strlen(good), NOW, got, sizeof got, NULL), 0);
}

static HeaderField field(const char *name, const char *value) {
        return (HeaderField) { name, strlen(name), value, strlen(value) };
}

static void assert_found(const HeaderField *fields, size_t n, const char *want) {
        const char *v = NULL;
        size_t len = 0;

        assert_int_equal(cookie_find(fields, n, COOKIE_NAME, &v, &len), 1);
        assert_int_equal(len, strlen(want));
        assert_memory_equal(v, want, len);
}

static void test_cookie_find_spacing(void **state) {
        HeaderField f[1];

        f[0] = field("Cookie", "ep_user=abc");
        assert_found(f, 1, "abc");
        f[0] = field("Cookie", "a=1; ep_user=abc; b=2");
        assert_found(f, 1, "abc");
        f[0] = field("Cookie", "a=1;ep_user=abc;b=2");
        assert_found(f, 1, "abc");
        f[0] = field("cookie", "  ep_user=abc  ");
        assert_found(f, 1, "abc");
        f[0] = field("COOKIE", "a=1;\t ep_user=abc\t;");
        assert_found(f, 1, "abc");
        f[0] = field("Cookie", "a=1; ep_user=");
        assert_found(f, 1, "");
        f[0] = field("Cookie", "ep_user=a=b");
        assert_found(f, 1, "a=b");
        /* the first of two wins */
        f[0] = field("Cookie", "ep_user=first; ep_user=second");
        assert_found(f, 1, "first");
}

static void test_cookie_find_not_prefixes(void **state) {
        HeaderField f[1];
        const char *v = NULL;
        size_t len = 0;

        f[0] = field("Cookie", "ep_user2=no; xep_user=no; ep_use=no; ep_user");
        assert_int_equal(cookie_find(f, 1, COOKIE_NAME, &v, &len), 0);
        f[0] = field("Cookie", "ep_user2=no; ep_user=yes");
        assert_found(f, 1, "yes");
        f[0] = field("Cookie", "");
        assert_int_equal(cookie_find(f, 1, COOKIE_NAME, &v, &len), 0);
        f[0] = field("Cookie", ";;; ;");
        assert_int_equal(cookie_find(f, 1, COOKIE_NAME, &v, &len), 0);
        assert_int_equal(cookie_find(f, 0, COOKIE_NAME, &v, &len), 0);
}

static void test_cookie_find_several_fields(void **state) {
        HeaderField f[4] = {
                field("Set-Cookie", "ep_user=not-a-request-cookie"),
                field("Cookie", "theme=dark"),
                field("X-Cookie", "ep_user=no"),
                field("Cookie", "lang=fr; ep_user=found"),
        };

        assert_found(f, 4, "found");
        assert_found(f + 3, 1, "found");
}

static void test_cookie_find_value_len_honoured(void **state) {
        /* field values are not NUL-terminated: nothing past value_len is looked at */
        const char raw[] = "a=1; ep_user=abcGARBAGE; ep_user=zzz";
        HeaderField f = { "Cookie", 6, raw, strlen("a=1; ep_user=abc") };
        const char *v;
        size_t len;

        assert_found(&f, 1, "abc");
        f.value_len = strlen("a=1; ep_use");
        assert_int_equal(cookie_find(&f, 1, COOKIE_NAME, &v, &len), 0);
        f.value_len = strlen("a=1; ep_user");
        assert_int_equal(cookie_find(&f, 1, COOKIE_NAME, &v, &len), 0);
        f.value_len = strlen("a=1; ep_user=");
        assert_found(&f, 1, "");
}

static char state_dir[] = "/tmp/test-cookie.XXXXXX";

static int setup_dir(void **state) {
        strcpy(state_dir + strlen(state_dir) - 6, "XXXXXX");
        return mkdtemp(state_dir) ? 0 : -1;
}

static int teardown_dir(void **state) {
        char cmd[sizeof state_dir + 16];

        snprintf(cmd, sizeof cmd, "rm -rf %s", state_dir);
        return system(cmd) == 0 ? 0 : -1;
}

static void key_path(char *buf, size_t size) {
        snprintf(buf, size, "%s/cookie.key", state_dir);
}

static void test_cookie_key_load_creates_and_reads_back(void **state) {
        CookieKey a = {}, b = {}, zero = {};
        char path[sizeof state_dir + 16];
        uint8_t disk[64];
        struct stat st;
        int fd;

        key_path(path, sizeof path);
        assert_int_equal(cookie_key_load(state_dir, &a, NULL), 0);
        assert_int_equal(stat(path, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal(st.st_size, COOKIE_KEY_SIZE);
        assert_memory_not_equal(a.key, zero.key, COOKIE_KEY_SIZE);

        fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(read(fd, disk, sizeof disk), COOKIE_KEY_SIZE);
        close(fd);
        assert_memory_equal(disk, a.key, COOKIE_KEY_SIZE);

        /* a restart reads the same key back: old cookies stay valid */
        assert_int_equal(cookie_key_load(state_dir, &b, NULL), 0);
        assert_memory_equal(a.key, b.key, COOKIE_KEY_SIZE);
}

static void test_cookie_key_load_wrong_size(void **state) {
        static const size_t sizes[] = { 0, 1, 31, 33, 64, 4096 };
        char path[sizeof state_dir + 16];
        uint8_t bytes[4096];
        CookieKey k;

        memset(bytes, 0x5a, sizeof bytes);
        key_path(path, sizeof path);
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                assert_true(fd >= 0);
                assert_int_equal(loop_write(fd, bytes, sizes[i]), 0);
                close(fd);
                memset(&k, 0x11, sizeof k);
                assert_int_equal(cookie_key_load(state_dir, &k, NULL), -EBADMSG);
                /* refused without touching the output, and the file is left for the operator */
                for (size_t j = 0; j < COOKIE_KEY_SIZE; j++)
                        assert_int_equal(k.key[j], 0x11);
                assert_int_equal(access(path, F_OK), 0);
        }
}

static void test_cookie_key_load_errors(void **state) {
        char path[sizeof state_dir + 32];
        CookieKey k;

        snprintf(path, sizeof path, "%s/missing", state_dir);
        /* no state directory: not created here */
        assert_int_equal(cookie_key_load(path, &k, NULL), -ENOENT);
        key_path(path, sizeof path);
        assert_int_equal(symlink("/dev/null", path), 0);
        assert_int_equal(cookie_key_load(state_dir, &k, NULL), -ELOOP); /* never follows a planted link */
        assert_int_equal(unlink(path), 0);
        assert_int_equal(mkdir(path, 0700), 0);
        assert_int_equal(cookie_key_load(state_dir, &k, NULL), -EISDIR);
        assert_int_equal(rmdir(path), 0);
}

/* Writes a 32-byte key file with this mode (and owner, when uid is not -1). */
static void plant_key(mode_t mode, uid_t uid) {
        char path[sizeof state_dir + 16];
        uint8_t bytes[COOKIE_KEY_SIZE];
        int fd;

        memset(bytes, 0x5a, sizeof bytes);
        key_path(path, sizeof path);
        (void) unlink(path);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, bytes, sizeof bytes), 0);
        assert_int_equal(fchmod(fd, mode), 0);
        if (uid != (uid_t) -1)
                assert_int_equal(fchown(fd, uid, (gid_t) -1), 0);
        close(fd);
}

static void test_cookie_key_load_refuses_open_mode(void **state) {
        /* any access for group or others: reading lets them sign cookies, writing choose the key */
        static const mode_t refused[] = { 0644, 0640, 0604, 0620, 0602, 0660, 0666, 0610, 0601 };
        char path[sizeof state_dir + 16], want[64];
        CookieKey k;

        key_path(path, sizeof path);
        for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
                _cleanup_free_ char *error = NULL;

                plant_key(refused[i], (uid_t) -1);
                memset(&k, 0x11, sizeof k);
                assert_int_equal(cookie_key_load(state_dir, &k, &error), -EPERM);
                /* the operator is told which file and which mode */
                assert_non_null(error);
                print_message("mode %04o: %s\n", (unsigned) refused[i], error);
                assert_non_null(strstr(error, path));
                snprintf(want, sizeof want, "mode %04o", (unsigned) refused[i]);
                assert_non_null(strstr(error, want));
                assert_int_equal(k.key[0], 0x11);
                /* and the key is left where it is */
                assert_int_equal(access(path, F_OK), 0);
        }
        /* the owner alone, even read-only, is fine */
        plant_key(0400, (uid_t) -1);
        assert_int_equal(cookie_key_load(state_dir, &k, NULL), 0);
        assert_int_equal(k.key[0], 0x5a);
        plant_key(0600, (uid_t) -1);
        assert_int_equal(cookie_key_load(state_dir, &k, NULL), 0);
}

static void test_cookie_key_load_refuses_other_owner(void **state) {
        _cleanup_free_ char *error = NULL;
        char path[sizeof state_dir + 16];
        CookieKey k;

        if (geteuid() != 0)
                skip(); /* only root can give a file away */
        key_path(path, sizeof path);
        plant_key(0600, 65534);
        assert_int_equal(cookie_key_load(state_dir, &k, &error), -EPERM);
        assert_non_null(error);
        print_message("%s\n", error);
        assert_non_null(strstr(error, path));
        assert_non_null(strstr(error, "uid 65534"));
}

static void test_cookie_key_load_created_0600_whatever_the_umask(void **state) {
        char path[sizeof state_dir + 16];
        mode_t old = umask(0);
        struct stat st;
        CookieKey k;

        key_path(path, sizeof path);
        assert_int_equal(cookie_key_load(state_dir, &k, NULL), 0);
        umask(old);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal(st.st_uid, geteuid());
}

/* Entries of dir other than "." and "..". */
static unsigned dir_entries(const char *dir) {
        _cleanup_free_ char *cmd = NULL;
        unsigned n = 0;
        FILE *f;

        assert_true(asprintf(&cmd, "ls -A '%s'", dir) > 0);
        f = popen(cmd, "r");
        assert_non_null(f);
        for (int c; (c = fgetc(f)) != EOF;)
                n += c == '\n';
        pclose(f);
        return n;
}

#define RACERS 8
#define ROUNDS 5

/* The kernel leaves a commander only microseconds in which another could read a key file it created but
 * did not write yet: a race that shows in a few percent of tries. This test holds the window open
 * instead. It defines write() itself, which the executable's calls (cookie.c's and fd-util.c's included)
 * reach before libc's; while slow_key_writes is set, a write of a key's size to a regular file waits
 * 20 ms before it happens. */
static bool slow_key_writes;

ssize_t write(int fd, const void *buf, size_t n) {
        struct stat st;

        if (slow_key_writes && n == COOKIE_KEY_SIZE && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
                (void) usleep(20 * 1000);
        return syscall(SYS_write, fd, buf, n);
}

typedef struct RaceResult {
        int r;
        uint8_t key[COOKIE_KEY_SIZE];
} RaceResult;

/* Commanders of one group starting together: each gets the same whole key, none a part of it and none an
 * error (with O_CREAT|O_EXCL and then write(), a loser could read the file between the two). */
static void test_cookie_key_load_concurrent_start(void **state) {
        slow_key_writes = true;
        for (unsigned round = 0; round < ROUNDS; round++) {
                _cleanup_free_ char *dir = NULL;
                RaceResult results[RACERS];
                int go[2], out[2];
                pid_t pids[RACERS];

                assert_true(asprintf(&dir, "%s/r%u", state_dir, round) > 0);
                assert_int_equal(mkdir(dir, 0700), 0);
                assert_int_equal(pipe2(go, O_CLOEXEC), 0);
                assert_int_equal(pipe2(out, O_CLOEXEC), 0);
                for (unsigned i = 0; i < RACERS; i++) {
                        pids[i] = fork();
                        assert_true(pids[i] >= 0);
                        if (pids[i] == 0) {
                                CookieKey k = {};
                                RaceResult res;
                                char c;

                                /* no cmocka in here: wait for the start, race, report, leave */
                                close(go[1]);
                                (void) read(go[0], &c, 1); /* EOF once the parent lets everyone go */
                                res.r = cookie_key_load(dir, &k, NULL);
                                memcpy(res.key, k.key, sizeof res.key);
                                /* one write under PIPE_BUF: the racers' reports do not interleave */
                                _exit(write(out[1], &res, sizeof res) == sizeof res ? 0 : 2);
                        }
                }
                close(go[0]);
                close(go[1]); /* go */
                close(out[1]);
                for (unsigned i = 0; i < RACERS; i++)
                        assert_int_equal(read(out[0], &results[i], sizeof results[i]), sizeof results[i]);
                close(out[0]);
                for (unsigned i = 0; i < RACERS; i++) {
                        int status;
                        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
                        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
                }
                for (unsigned i = 0; i < RACERS; i++) {
                        if (results[i].r != 0)
                                print_message("round %u, racer %u: %s\n", round, i, strerror(-results[i].r));
                        assert_int_equal(results[i].r, 0);
                        assert_memory_equal(results[i].key, results[0].key, COOKIE_KEY_SIZE);
                }
                /* the key and nothing else: no temporary file left behind */
                assert_int_equal(dir_entries(dir), 1);
        }
        slow_key_writes = false;
}

/* ---- logouts ---- */

#define T 1700000000000000ULL /* µs */
#define DAY (86400ULL * 1000000ULL)

static void test_cookie_stamp_strictly_increasing(void **state) {
        CookieRevocations r;

        cookie_revocations_init(&r, 10);
        assert_int_equal(cookie_stamp(&r, T), T);
        /* the same microsecond twice: the second is later */
        assert_int_equal(cookie_stamp(&r, T), T + 1);
        /* the wall clock stepped back: still later */
        assert_int_equal(cookie_stamp(&r, T - 5 * DAY), T + 2);
        /* and once it is past again, it is the clock */
        assert_int_equal(cookie_stamp(&r, T + 10), T + 10);
        cookie_revocations_done(&r);
}

static void test_cookie_revoke_voids_cookies_up_to_the_logout(void **state) {
        char before[COOKIE_VALUE_MAX], after[COOKIE_VALUE_MAX], got[COOKIE_USER_MAX + 1];
        CookieRevocations r;
        uint64_t logout;

        cookie_revocations_init(&r, 10);
        /* login, logout and a new login in the same microsecond: the new cookie is valid at once */
        assert_true(cookie_sign(&key, "alice", cookie_stamp(&r, T), NOW + 60, before, sizeof before) > 0);
        logout = cookie_stamp(&r, T);
        assert_int_equal(cookie_revoke(&r, "alice", logout, logout + 7 * DAY, T, NULL), 0);
        assert_true(cookie_sign(&key, "alice", cookie_stamp(&r, T), NOW + 60, after, sizeof after) > 0);

        assert_int_equal(verify(&key, before, NOW, got), 0); /* still genuine: revocation is separate */
        assert_true(cookie_revoked(&r, "alice", verify_issued(&key, before, NOW)));
        assert_false(cookie_revoked(&r, "alice", verify_issued(&key, after, NOW)));
        /* at the logout's own stamp: revoked; one later: not */
        assert_true(cookie_revoked(&r, "alice", logout));
        assert_false(cookie_revoked(&r, "alice", logout + 1));
        /* a cookie of the earlier format (issued 0) is older than any logout */
        assert_true(cookie_revoked(&r, "alice", 0));
        /* nobody else */
        assert_false(cookie_revoked(&r, "bob", 0));
        assert_false(cookie_revoked(&r, "alic", 0));

        /* logged out again later: the later logout counts */
        assert_int_equal(cookie_revoke(&r, "alice", T + 100, T + 100 + 7 * DAY, T + 100, NULL), 0);
        assert_true(cookie_revoked(&r, "alice", verify_issued(&key, after, NOW)));
        assert_int_equal(r.n, 1);
        cookie_revocations_done(&r);
}

static void test_cookie_revocations_expire(void **state) {
        CookieRevocations r;

        cookie_revocations_init(&r, 10);
        assert_int_equal(cookie_revoke(&r, "a", T, T + DAY, T, NULL), 0);
        assert_int_equal(cookie_revoke(&r, "b", T + 10, T + 10 + DAY, T + 10, NULL), 0);
        assert_int_equal(cookie_revocations_expire(&r, T + DAY - 1), 0);
        assert_int_equal(cookie_revocations_expire(&r, T + DAY), 1); /* every cookie it voided is expired */
        assert_false(cookie_revoked(&r, "a", 0));
        assert_true(cookie_revoked(&r, "b", 0));
        /* a logout drops what is due first, so records that are due take no room */
        assert_int_equal(cookie_revoke(&r, "c", T + 2 * DAY, T + 3 * DAY, T + 2 * DAY, NULL), 0);
        assert_false(cookie_revoked(&r, "b", 0));
        assert_int_equal(r.n, 1);
        cookie_revocations_done(&r);
}

static void test_cookie_revoke_cap_forgets_the_oldest(void **state) {
        _cleanup_free_ char *evicted = NULL;
        CookieRevocations r;
        char name[16];

        cookie_revocations_init(&r, 3);
        for (unsigned i = 1; i <= 3; i++) {
                snprintf(name, sizeof name, "u%u", i);
                assert_int_equal(cookie_revoke(&r, name, T + i, T + i + DAY, T + i, NULL), 0);
        }
        /* u1 logs out again: now the newest */
        assert_int_equal(cookie_revoke(&r, "u1", T + 4, T + 4 + DAY, T + 4, NULL), 0);
        assert_int_equal(r.forgotten_through, 0);
        /* a fourth user: the oldest record (u2's) goes, and the caller learns whose */
        assert_int_equal(cookie_revoke(&r, "u4", T + 5, T + 5 + DAY, T + 5, &evicted), 1);
        assert_string_equal(evicted, "u2");
        assert_int_equal(r.n, 3);
        assert_false(cookie_revoked(&r, "u2", 0));
        assert_true(cookie_revoked(&r, "u1", T + 4));
        assert_true(cookie_revoked(&r, "u3", T + 3));
        assert_true(cookie_revoked(&r, "u4", T + 5));
        /* how recent a forgotten logout was: cookies up to it may have been voided by one */
        assert_int_equal(r.forgotten_through, T + 2);

        /* max lowered (a reload): the next logout brings the records down to it */
        r.max = 1;
        free(evicted);
        evicted = NULL;
        assert_int_equal(cookie_revoke(&r, "u5", T + 6, T + 6 + DAY, T + 6, &evicted), 3);
        assert_string_equal(evicted, "u3");
        assert_int_equal(r.n, 1);
        assert_true(cookie_revoked(&r, "u5", T + 6));
        assert_false(cookie_revoked(&r, "u4", 0));
        cookie_revocations_done(&r);
}

static void test_cookie_revocations_many(void **state) {
        CookieRevocations r;
        char name[32];

        /* enough records to make the map grow and the list long; then every one found, and freed */
        cookie_revocations_init(&r, 100000);
        for (unsigned i = 0; i < 20000; i++) {
                snprintf(name, sizeof name, "user-%u", i);
                assert_int_equal(cookie_revoke(&r, name, T + i, T + i + DAY, T, NULL), 0);
        }
        for (unsigned i = 0; i < 20000; i += 997) {
                snprintf(name, sizeof name, "user-%u", i);
                assert_true(cookie_revoked(&r, name, T + i));
                assert_false(cookie_revoked(&r, name, T + i + 1));
        }
        assert_int_equal(cookie_revocations_expire(&r, T + DAY + 10000), 10001);
        assert_int_equal(r.n, 9999);
        cookie_revocations_done(&r);
        assert_int_equal(r.n, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cookie_sign_verify_round_trip),
                cmocka_unit_test(test_cookie_key_bind_groups_apart),
                cmocka_unit_test(test_cookie_sign_base64url_edge_lengths),
                cmocka_unit_test(test_cookie_sign_user_of_256),
                cmocka_unit_test(test_cookie_verify_forged),
                cmocka_unit_test(test_cookie_verify_mac_spelled_once),
                cmocka_unit_test(test_cookie_verify_expired),
                cmocka_unit_test(test_cookie_verify_signed_but_malformed),
                cmocka_unit_test(test_cookie_verify_malformed_table),
                cmocka_unit_test(test_cookie_find_spacing),
                cmocka_unit_test(test_cookie_find_not_prefixes),
                cmocka_unit_test(test_cookie_find_several_fields),
                cmocka_unit_test(test_cookie_find_value_len_honoured),
                cmocka_unit_test_setup_teardown(test_cookie_key_load_creates_and_reads_back, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_cookie_key_load_wrong_size, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_cookie_key_load_errors, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_cookie_key_load_refuses_open_mode, setup_dir,
                                                teardown_dir),
                cmocka_unit_test_setup_teardown(test_cookie_key_load_refuses_other_owner, setup_dir,
                                                teardown_dir),
                cmocka_unit_test_setup_teardown(test_cookie_key_load_created_0600_whatever_the_umask,
                                                setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_cookie_key_load_concurrent_start, setup_dir,
                                                teardown_dir),
                cmocka_unit_test(test_cookie_stamp_strictly_increasing),
                cmocka_unit_test(test_cookie_revoke_voids_cookies_up_to_the_logout),
                cmocka_unit_test(test_cookie_revocations_expire),
                cmocka_unit_test(test_cookie_revoke_cap_forgets_the_oldest),
                cmocka_unit_test(test_cookie_revocations_many),
        };
        return cmocka_run_group_tests(tests, setup, NULL);
}
