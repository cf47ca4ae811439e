/* SPDX-License-Identifier: MIT */
#include "cookie.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fd-util.h"
#include "list.h"
#include "macro.h"

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Unpadded base64url length of n bytes. */
#define B64URL_LENGTH(n) ((n) / 3 * 4 + ((n) % 3 == 0 ? 0 : (n) % 3 + 1))
/* cookie_sign() writes into COOKIE_VALUE_MAX bytes: the longest value (a COOKIE_USER_MAX user, a 20-digit
 * expiry and a 20-digit issue stamp) must fit, NUL included */
_Static_assert(B64URL_LENGTH(COOKIE_USER_MAX) + 1 + 20 + 1 + 20 + 1 + B64URL_LENGTH(32) + 1 <=
                       COOKIE_VALUE_MAX,
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

/* Sets *ret_error (when asked for) to the formatted sentence and returns r. */
_printf_(3, 4) static int key_error(char **ret_error, int r, const char *format, ...) {
        va_list ap;

        if (ret_error) {
                va_start(ap, format);
                if (vasprintf(ret_error, format, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return r;
}

/* An existing key file: anyone who can read it can sign a cookie for any user, and anyone who can
 * write it can make the commander accept their own key; so it must be ours and closed to everyone
 * else. Checked on the open file, not on the path, so nothing can be swapped in between. */
static int key_read(int fd, const char *path, CookieKey *ret, char **ret_error) {
        uint8_t key[COOKIE_KEY_SIZE + 1];
        struct stat st;
        ssize_t n;

        if (fstat(fd, &st) < 0)
                return key_error(ret_error, -errno, "Cannot stat %s: %s", path, strerror(errno));
        if (S_ISDIR(st.st_mode))
                return key_error(ret_error, -EISDIR, "%s is a directory, not a key file", path);
        if (!S_ISREG(st.st_mode))
                return key_error(ret_error, -EBADMSG, "%s is not a regular file", path);
        if (st.st_uid != geteuid())
                return key_error(ret_error, -EPERM,
                                 "%s is owned by uid %u, not by uid %u the commander runs as: refusing a "
                                 "signing key another user controls (chown it, or remove it to have a new "
                                 "one made, which logs every user out)",
                                 path, (unsigned) st.st_uid, (unsigned) geteuid());
        if ((st.st_mode & 077) != 0)
                return key_error(ret_error, -EPERM,
                                 "%s has mode %04o: group or others may read or replace the key that signs "
                                 "every user's cookie (chmod 0600 it, or remove it to have a new one made, "
                                 "which logs every user out)",
                                 path, (unsigned) (st.st_mode & 07777));
        /* one byte more than a key: a longer file is as wrong as a shorter one */
        n = pread_string(fd, (char *) key, sizeof key);
        if (n == -EFBIG || (n >= 0 && n != COOKIE_KEY_SIZE))
                return key_error(ret_error, -EBADMSG, "%s is %lld bytes long, a key is %d", path,
                                 (long long) st.st_size, COOKIE_KEY_SIZE);
        if (n < 0)
                return key_error(ret_error, (int) n, "Cannot read %s: %s", path, strerror((int) -n));
        memcpy(ret->key, key, sizeof ret->key);
        return 0;
}

/* Makes a new key: written and synced under a temporary name (mkostemp: O_EXCL, mode 0600), then
 * link()ed to its name, which fails with EEXIST rather than replace a key another commander linked
 * first. So cookie.key, once it exists, is always whole. 1 with the key created, 0 when another
 * commander's key was there first (read that one), -errno. */
static int key_create(const char *state_dir, const char *path, CookieKey *ret, char **ret_error) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -EBADF, dir_fd = -EBADF;
        uint8_t key[COOKIE_KEY_SIZE];
        int r;

        if (getrandom(key, sizeof key, 0) != (ssize_t) sizeof key)
                return key_error(ret_error, -EIO, "Cannot get %d random bytes for a new %s", COOKIE_KEY_SIZE,
                                 path);
        if (asprintf(&tmp, "%s/.cookie.key.XXXXXX", state_dir) < 0)
                return -ENOMEM;
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return key_error(ret_error, -errno, "Cannot create a temporary file in %s: %s", state_dir,
                                 strerror(errno));
        r = loop_write(fd, key, sizeof key);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && link(tmp, path) < 0)
                r = -errno;
        (void) unlink(tmp);
        if (r == -EEXIST)
                return 0;
        if (r < 0)
                return key_error(ret_error, r, "Cannot create %s: %s", path, strerror(-r));
        /* the new name must survive a crash as surely as the bytes it names */
        dir_fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd >= 0)
                (void) fsync(dir_fd);
        memcpy(ret->key, key, sizeof ret->key);
        return 1;
}

int cookie_key_load(const char *state_dir, CookieKey *ret, char **ret_error) {
        _cleanup_free_ char *path = NULL;
        int r;

        if (ret_error)
                *ret_error = NULL;
        if (asprintf(&path, "%s/cookie.key", state_dir) < 0)
                return -ENOMEM;
        /* a second round only when another commander linked its key between our open and our link; a
         * third only if that key was removed again at once */
        for (unsigned attempt = 0; attempt < 3; attempt++) {
                _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);

                if (fd >= 0)
                        return key_read(fd, path, ret, ret_error);
                if (errno != ENOENT)
                        return key_error(ret_error, -errno, "Cannot open %s: %s", path, strerror(errno));
                r = key_create(state_dir, path, ret, ret_error);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
        return key_error(ret_error, -EBUSY, "%s keeps appearing and disappearing", path);
}

int cookie_key_bind(CookieKey *k, const char *group) {
        static const char label[] = "elastic-pool cookie key"; /* its NUL separates it from the group */
        uint8_t data[sizeof label + 256], out[COOKIE_KEY_SIZE];
        size_t glen = strlen(group), out_len = 0;

        if (glen > sizeof data - sizeof label)
                return -EINVAL;
        memcpy(data, label, sizeof label);
        memcpy(data + sizeof label, group, glen);
        if (!EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, k->key, sizeof k->key, data, sizeof label + glen, out,
                       sizeof out, &out_len) ||
            out_len != sizeof out)
                return -EIO;
        memcpy(k->key, out, sizeof k->key);
        explicit_bzero(out, sizeof out);
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

/* mac over "<user b64>.<expiry>.<issued>": exactly the bytes before the last dot. */
static int mac(const CookieKey *k, const char *data, size_t len, uint8_t out[32]) {
        EVP_MAC_CTX *ctx = mac_context(k);
        size_t out_len = 0;

        if (!ctx || !EVP_MAC_update(ctx, (const unsigned char *) data, len) ||
            !EVP_MAC_final(ctx, out, &out_len, 32) || out_len != 32)
                return -EIO;
        return 0;
}

int cookie_sign(const CookieKey *k, const char *user, uint64_t issued, uint64_t expires_at, char *buf,
                size_t size) {
        size_t ulen = strlen(user), n;
        uint8_t m[32];
        int r;

        if (ulen == 0 || ulen > COOKIE_USER_MAX)
                return -EINVAL;
        if (size < COOKIE_VALUE_MAX)
                return -ENOBUFS;
        n = b64url_encode((const uint8_t *) user, ulen, buf);
        n += (size_t) snprintf(buf + n, size - n, ".%llu.%llu", (unsigned long long) expires_at,
                               (unsigned long long) issued);
        r = mac(k, buf, n, m);
        if (r < 0)
                return r;
        buf[n++] = '.';
        n += b64url_encode(m, sizeof m, buf + n);
        buf[n] = 0;
        return (int) n;
}

/* Decimal digits from p up to the first byte that is not one (at most end), into *ret. The end of the
 * number, or NULL when there is none or it overflows. */
static const char *parse_number(const char *p, const char *end, uint64_t *ret) {
        const char *start = p;
        uint64_t v = 0;

        for (; p < end && *p >= '0' && *p <= '9'; p++) {
                if (v > (UINT64_MAX - (uint64_t) (*p - '0')) / 10)
                        return NULL;
                v = v * 10 + (uint64_t) (*p - '0');
        }
        if (p == start)
                return NULL;
        *ret = v;
        return p;
}

/* "<expiry>.<issued>" (or, from before issue stamps, "<expiry>" alone, read as issued 0) between the
 * first and the last dot. 0 or -EBADMSG. */
static int parse_stamps(const char *p, const char *end, uint64_t *ret_expiry, uint64_t *ret_issued) {
        uint64_t issued = 0;

        p = parse_number(p, end, ret_expiry);
        if (p && p < end && *p == '.')
                p = parse_number(p + 1, end, &issued);
        if (p != end)
                return -EBADMSG;
        *ret_issued = issued;
        return 0;
}

int cookie_verify(const CookieKey *k, const char *value, size_t len, uint64_t now, char *ret_user,
                  size_t ret_size, uint64_t *ret_issued) {
        const char *dot1, *last;
        uint8_t want[32], got[32];
        uint64_t expiry = 0, issued = 0;
        int r, ulen;

        if (len >= COOKIE_VALUE_MAX)
                return -EBADMSG;
        dot1 = memchr(value, '.', len);
        last = memrchr(value, '.', len);
        if (!dot1 || last == dot1)
                return -EBADMSG;
        if (parse_stamps(dot1 + 1, last, &expiry, &issued) < 0)
                return -EBADMSG;
        r = b64url_decode(last + 1, len - (size_t) (last + 1 - value), got, sizeof got);
        if (r != (int) sizeof got)
                return -EBADMSG;
        r = mac(k, value, (size_t) (last - value), want);
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
        if (ret_issued)
                *ret_issued = issued;
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

/* ---- logouts ---- */

struct CookieRevocation {
        CookieRevocation *older, *newer;
        uint64_t stamp; /* cookies of user issued at or before it are void */
        uint64_t until; /* and all of them have expired by then */
        char user[];
};

void cookie_revocations_init(CookieRevocations *r, size_t max) {
        *r = (CookieRevocations) { .max = MAX(max, (size_t) 1) };
        strmap_init(&r->users);
}

static void record_unlink(CookieRevocations *r, CookieRevocation *e) {
        QUEUE_REMOVE(r->oldest, r->newest, e, older, newer);
}

static void record_append(CookieRevocations *r, CookieRevocation *e) {
        QUEUE_APPEND(r->oldest, r->newest, e, older, newer);
}

static void record_drop(CookieRevocations *r, CookieRevocation *e) {
        (void) strmap_remove(&r->users, e->user);
        record_unlink(r, e);
        free(e);
        r->n--;
}

void cookie_revocations_done(CookieRevocations *r) {
        while (r->oldest)
                record_drop(r, r->oldest);
        strmap_done(&r->users);
        *r = (CookieRevocations) {};
}

uint64_t cookie_stamp(CookieRevocations *r, uint64_t now) {
        r->last_stamp = now > r->last_stamp ? now : r->last_stamp + 1;
        return r->last_stamp;
}

size_t cookie_revocations_expire(CookieRevocations *r, uint64_t now) {
        size_t n = 0;

        /* records are appended in stamp order with `until` a fixed span after the stamp, so the ones
         * that are due sit at the old end */
        while (r->oldest && r->oldest->until <= now) {
                record_drop(r, r->oldest);
                n++;
        }
        return n;
}

int cookie_revoke(CookieRevocations *r, const char *user, uint64_t stamp, uint64_t until, uint64_t now,
                  char **ret_evicted) {
        _cleanup_free_ CookieRevocation *e = NULL;
        _cleanup_free_ char *evicted = NULL;
        CookieRevocation *have;
        size_t len = strlen(user);
        int q;

        (void) cookie_revocations_expire(r, now);
        have = strmap_get(&r->users, user);
        if (have) {
                /* logged out again: the later logout voids everything the earlier one did, and more */
                have->stamp = MAX(have->stamp, stamp);
                have->until = MAX(have->until, until);
                record_unlink(r, have);
                record_append(r, have);
                return 0;
        }
        /* everything that can fail first, so -ENOMEM leaves the records as they were */
        e = malloc(sizeof *e + len + 1);
        if (!e)
                return -ENOMEM;
        *e = (CookieRevocation) { .stamp = stamp, .until = until };
        memcpy(e->user, user, len + 1);
        if (r->n >= r->max && ret_evicted) {
                evicted = strdup(r->oldest->user);
                if (!evicted)
                        return -ENOMEM;
        }
        q = strmap_put(&r->users, e->user, e, NULL);
        if (q < 0)
                return q;
        /* more than one only when max was lowered since */
        for (q = 0; r->n >= r->max; q++) {
                r->forgotten_through = MAX(r->forgotten_through, r->oldest->stamp);
                record_drop(r, r->oldest);
        }
        record_append(r, e);
        r->n++;
        TAKE_PTR(e);
        if (ret_evicted)
                *ret_evicted = TAKE_PTR(evicted);
        return q;
}

bool cookie_revoked(const CookieRevocations *r, const char *user, uint64_t issued) {
        const CookieRevocation *e = strmap_get(&r->users, user);

        return e && issued <= e->stamp;
}
