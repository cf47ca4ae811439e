/* SPDX-License-Identifier: MIT */
#include "cookie.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fd-util.h"
#include "macro.h"

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Unpadded base64url length of n bytes. */
#define B64URL_LENGTH(n) ((n) / 3 * 4 + ((n) % 3 == 0 ? 0 : (n) % 3 + 1))
/* cookie_sign() writes into COOKIE_VALUE_MAX bytes: the longest value (a COOKIE_USER_MAX user, a 20-digit
 * expiry) must fit, NUL included */
_Static_assert(B64URL_LENGTH(COOKIE_USER_MAX) + 1 + 20 + 1 + B64URL_LENGTH(32) + 1 <= COOKIE_VALUE_MAX,
               "COOKIE_VALUE_MAX cannot hold the longest cookie");

static size_t b64url_encode(const uint8_t *in, size_t n, char *out) {
        size_t o = 0;

        for (size_t i = 0; i < n; i += 3) {
                uint32_t v = (uint32_t) in[i] << 16;
                if (i + 1 < n)
                        v |= (uint32_t) in[i + 1] << 8;
                if (i + 2 < n)
                        v |= in[i + 2];
                out[o++] = b64url[(v >> 18) & 63];
                out[o++] = b64url[(v >> 12) & 63];
                if (i + 1 < n)
                        out[o++] = b64url[(v >> 6) & 63];
                if (i + 2 < n)
                        out[o++] = b64url[v & 63];
        }
        return o;
}

/* The inverse of b64url[] (a strchr() over it per character was a third of a verify). */
static int b64url_value(char c) {
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        return c == '-' ? 62 : c == '_' ? 63 : -1;
}

/* Unpadded base64url; -EBADMSG on a bad character or length, or on a last character with bits set that
 * encode nothing (each value has one spelling, so a signed cookie cannot be re-spelled into another
 * accepted one). Returns the decoded length. */
static int b64url_decode(const char *in, size_t n, uint8_t *out, size_t size) {
        size_t o = 0;
        uint32_t acc = 0;
        unsigned bits = 0;

        if (n % 4 == 1)
                return -EBADMSG;
        for (size_t i = 0; i < n; i++) {
                int v = b64url_value(in[i]);
                if (v < 0)
                        return -EBADMSG;
                acc = acc << 6 | (uint32_t) v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        if (o >= size)
                                return -ENOBUFS;
                        out[o++] = (uint8_t) (acc >> bits);
                }
        }
        if (bits > 0 && (acc & ((1U << bits) - 1)) != 0)
                return -EBADMSG;
        return (int) o;
}

int cookie_key_load(const char *state_dir, CookieKey *ret) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        uint8_t key[COOKIE_KEY_SIZE + 1];
        ssize_t n;

        if (asprintf(&path, "%s/cookie.key", state_dir) < 0)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0) {
                /* one byte more than a key: a longer file is as wrong as a shorter one */
                n = pread_string(fd, (char *) key, sizeof key);
                if (n == -EFBIG)
                        return -EBADMSG;
                if (n < 0)
                        return (int) n;
                if (n != COOKIE_KEY_SIZE)
                        return -EBADMSG;
                memcpy(ret->key, key, sizeof ret->key);
                return 0;
        }
        if (errno != ENOENT)
                return -errno;
        if (getrandom(key, COOKIE_KEY_SIZE, 0) != COOKIE_KEY_SIZE)
                return -EIO;
        /* O_EXCL: a second commander racing us must not get a different key */
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) {
                if (errno == EEXIST)
                        return cookie_key_load(state_dir, ret);
                return -errno;
        }
        n = write(fd, key, COOKIE_KEY_SIZE);
        if (n != COOKIE_KEY_SIZE || fsync(fd) < 0) {
                int r = n < 0 || n == COOKIE_KEY_SIZE ? -errno : -EIO;
                (void) unlink(path);
                return r;
        }
        memcpy(ret->key, key, sizeof ret->key);
        return 0;
}

/* HMAC() fetches the algorithm, then allocates and keys a context on every call: about 1 us of every
 * request with a cookie (and of every login). A context keyed once and then only reset (EVP_MAC_init()
 * without a key keeps the one it has) costs about 0.17 us. Contexts are not shared between threads, so one
 * per thread; it is keyed again when another key comes (one key per commander, two in the unit test). */
static _Thread_local EVP_MAC_CTX *mac_ctx;
static _Thread_local uint8_t mac_ctx_key[COOKIE_KEY_SIZE];

static EVP_MAC_CTX *mac_context(const CookieKey *k) {
        OSSL_PARAM params[] = {
                OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *) "SHA256", 0),
                OSSL_PARAM_construct_end(),
        };
        EVP_MAC *m;

        if (mac_ctx && memcmp(mac_ctx_key, k->key, sizeof mac_ctx_key) == 0)
                return EVP_MAC_init(mac_ctx, NULL, 0, NULL) ? mac_ctx : NULL;
        if (!mac_ctx) {
                m = EVP_MAC_fetch(NULL, OSSL_MAC_NAME_HMAC, NULL);
                if (!m)
                        return NULL;
                mac_ctx = EVP_MAC_CTX_new(m); /* holds its own reference to m */
                EVP_MAC_free(m);
                if (!mac_ctx)
                        return NULL;
        }
        if (!EVP_MAC_init(mac_ctx, k->key, sizeof k->key, params)) {
                /* half keyed: start from scratch next time */
                EVP_MAC_CTX_free(mac_ctx);
                mac_ctx = NULL;
                return NULL;
        }
        memcpy(mac_ctx_key, k->key, sizeof mac_ctx_key);
        return mac_ctx;
}

/* mac over "<user b64>.<expiry>": exactly the bytes before the second dot. */
static int mac(const CookieKey *k, const char *data, size_t len, uint8_t out[32]) {
        EVP_MAC_CTX *ctx = mac_context(k);
        size_t out_len = 0;

        if (!ctx || !EVP_MAC_update(ctx, (const unsigned char *) data, len) ||
            !EVP_MAC_final(ctx, out, &out_len, 32) || out_len != 32)
                return -EIO;
        return 0;
}

int cookie_sign(const CookieKey *k, const char *user, uint64_t expires_at, char *buf, size_t size) {
        size_t ulen = strlen(user), n;
        uint8_t m[32];
        int r;

        if (ulen == 0 || ulen > COOKIE_USER_MAX)
                return -EINVAL;
        if (size < COOKIE_VALUE_MAX)
                return -ENOBUFS;
        n = b64url_encode((const uint8_t *) user, ulen, buf);
        n += (size_t) snprintf(buf + n, size - n, ".%llu", (unsigned long long) expires_at);
        r = mac(k, buf, n, m);
        if (r < 0)
                return r;
        buf[n++] = '.';
        n += b64url_encode(m, sizeof m, buf + n);
        buf[n] = 0;
        return (int) n;
}

int cookie_verify(const CookieKey *k, const char *value, size_t len, uint64_t now, char *ret_user, size_t ret_size) {
        const char *dot1, *dot2;
        uint8_t want[32], got[32];
        uint64_t expiry = 0;
        int r, ulen;

        if (len >= COOKIE_VALUE_MAX)
                return -EBADMSG;
        dot1 = memchr(value, '.', len);
        if (!dot1)
                return -EBADMSG;
        dot2 = memchr(dot1 + 1, '.', len - (size_t) (dot1 + 1 - value));
        if (!dot2 || dot2 == dot1 + 1)
                return -EBADMSG;
        for (const char *p = dot1 + 1; p < dot2; p++) {
                if (*p < '0' || *p > '9' || expiry > (UINT64_MAX - (uint64_t) (*p - '0')) / 10)
                        return -EBADMSG;
                expiry = expiry * 10 + (uint64_t) (*p - '0');
        }
        r = b64url_decode(dot2 + 1, len - (size_t) (dot2 + 1 - value), got, sizeof got);
        if (r != (int) sizeof got)
                return -EBADMSG;
        r = mac(k, value, (size_t) (dot2 - value), want);
        if (r < 0)
                return r;
        if (CRYPTO_memcmp(want, got, sizeof want) != 0)
                return -EBADMSG;
        /* only a genuine cookie is told apart as expired */
        if (expiry <= now)
                return -ETIME;
        ulen = b64url_decode(value, (size_t) (dot1 - value), (uint8_t *) ret_user, ret_size - 1);
        if (ulen <= 0)
                return -EBADMSG;
        ret_user[ulen] = 0;
        if (memchr(ret_user, 0, (size_t) ulen))
                return -EBADMSG;
        return 0;
}

int cookie_find(const HeaderField *fields, size_t n, const char *name, const char **ret_value, size_t *ret_len) {
        size_t nlen = strlen(name);

        for (size_t i = 0; i < n; i++) {
                const char *p, *end;

                if (!header_name_is(&fields[i], "cookie"))
                        continue;
                p = fields[i].value;
                end = p + fields[i].value_len;
                while (p < end) {
                        const char *pair_end = memchr(p, ';', (size_t) (end - p));
                        if (!pair_end)
                                pair_end = end;
                        while (p < pair_end && (*p == ' ' || *p == '\t'))
                                p++;
                        if ((size_t) (pair_end - p) > nlen && memcmp(p, name, nlen) == 0 && p[nlen] == '=') {
                                const char *v = p + nlen + 1, *ve = pair_end;
                                while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                                        ve--;
                                *ret_value = v;
                                *ret_len = (size_t) (ve - v);
                                return 1;
                        }
                        p = pair_end + 1;
                }
        }
        return 0;
}
