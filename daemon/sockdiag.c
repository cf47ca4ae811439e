/* SPDX-License-Identifier: MIT */
#include "sockdiag.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netinet/tcp.h>
#include <netlink/socket.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "cleanup.h"

struct SockDiag {
        struct nl_sock *sk;
};

typedef struct Answer {
        bool found;
        uint32_t queued, limit;
} Answer;

static int on_valid(struct nl_msg *msg, void *arg) {
        struct nlmsghdr *h = nlmsg_hdr(msg);
        struct nlattr *tb[UNIX_DIAG_MAX + 1];
        Answer *a = arg;

        if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || nlmsg_datalen(h) < (int) sizeof(struct unix_diag_msg))
                return NL_SKIP;
        if (nlmsg_parse(h, sizeof(struct unix_diag_msg), tb, UNIX_DIAG_MAX, NULL) < 0)
                return NL_SKIP;
        if (!tb[UNIX_DIAG_RQLEN] || nla_len(tb[UNIX_DIAG_RQLEN]) < (int) sizeof(struct unix_diag_rqlen))
                return NL_SKIP;
        const struct unix_diag_rqlen *q = nla_data(tb[UNIX_DIAG_RQLEN]);
        /* for a listening socket rqueue is the accept queue length and wqueue the backlog limit */
        a->queued = q->udiag_rqueue;
        a->limit = q->udiag_wqueue;
        a->found = true;
        return NL_OK;
}

int sock_diag_new(SockDiag **ret) {
        _cleanup_free_ SockDiag *d = NULL;
        int r;

        d = calloc(1, sizeof *d);
        if (!d)
                return -ENOMEM;
        d->sk = nl_socket_alloc();
        if (!d->sk)
                return -ENOMEM;
        r = nl_connect(d->sk, NETLINK_SOCK_DIAG);
        if (r < 0) {
                nl_socket_free(d->sk);
                return -EPROTONOSUPPORT;
        }
        /* one answer per request, no ACK after it: a late ACK would be read as the next answer */
        nl_socket_disable_auto_ack(d->sk);
        *ret = TAKE_PTR(d);
        return 0;
}

SockDiag *sock_diag_free(SockDiag *d) {
        if (!d)
                return NULL;
        nl_socket_free(d->sk);
        free(d);
        return NULL;
}

/* Sends req (with NLM_F_REQUEST and flags) and hands each answer to cb. 0; -ENOMEM; -ENOENT when the
 * kernel has no such socket; -EIO for anything else netlink said. */
static int ask(SockDiag *d, int flags, const struct unix_diag_req *req, nl_recvmsg_msg_cb_t cb, void *arg) {
        struct nl_msg *msg;
        int r;

        msg = nlmsg_alloc_simple(SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | flags);
        if (!msg)
                return -ENOMEM;
        r = nlmsg_append(msg, (void *) req, sizeof *req, NLMSG_ALIGNTO);
        if (r >= 0)
                r = nl_send_auto(d->sk, msg);
        nlmsg_free(msg);
        if (r < 0)
                return -EIO;
        r = nl_socket_modify_cb(d->sk, NL_CB_VALID, NL_CB_CUSTOM, cb, arg);
        if (r < 0)
                return -EIO;
        r = nl_recvmsgs_default(d->sk);
        if (r == -NLE_OBJ_NOTFOUND)
                return -ENOENT;
        return r < 0 ? -EIO : 0;
}

int sock_diag_unix_backlog(SockDiag *d, uint64_t ino, uint32_t *ret_queued, uint32_t *ret_limit) {
        struct unix_diag_req req = {
                .sdiag_family = AF_UNIX,
                .udiag_states = ~0U,
                .udiag_ino = (uint32_t) ino,
                .udiag_show = UDIAG_SHOW_RQLEN,
                .udiag_cookie = { INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE },
        };
        Answer a = {};
        int r;

        /* an exact lookup by inode (no NLM_F_DUMP): one answer or an error */
        r = ask(d, 0, &req, on_valid, &a);
        if (r < 0)
                return r;
        if (!a.found)
                return -ENOENT;
        if (ret_queued)
                *ret_queued = a.queued;
        if (ret_limit)
                *ret_limit = a.limit;
        return 0;
}

/* ---- one dump for many sockets ---- */

typedef struct Wanted {
        uint64_t ino;
        size_t index;
} Wanted;

typedef struct DumpAnswer {
        Wanted *wanted; /* sorted by inode */
        size_t n;
        uint32_t *queued;
        bool *found;
} DumpAnswer;

static int wanted_compare(const void *a, const void *b) {
        const Wanted *x = a, *y = b;

        return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static int on_dump_valid(struct nl_msg *msg, void *arg) {
        struct nlmsghdr *h = nlmsg_hdr(msg);
        struct nlattr *tb[UNIX_DIAG_MAX + 1];
        DumpAnswer *a = arg;
        Wanted key, *hit;

        if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || nlmsg_datalen(h) < (int) sizeof(struct unix_diag_msg))
                return NL_SKIP;
        key.ino = ((const struct unix_diag_msg *) nlmsg_data(h))->udiag_ino;
        hit = bsearch(&key, a->wanted, a->n, sizeof *a->wanted, wanted_compare);
        if (!hit)
                return NL_SKIP; /* another process's listening socket */
        if (nlmsg_parse(h, sizeof(struct unix_diag_msg), tb, UNIX_DIAG_MAX, NULL) < 0 || !tb[UNIX_DIAG_RQLEN] ||
            nla_len(tb[UNIX_DIAG_RQLEN]) < (int) sizeof(struct unix_diag_rqlen))
                return NL_SKIP;
        a->queued[hit->index] = ((const struct unix_diag_rqlen *) nla_data(tb[UNIX_DIAG_RQLEN]))->udiag_rqueue;
        a->found[hit->index] = true;
        return NL_OK;
}

int sock_diag_unix_backlogs(SockDiag *d, const uint64_t *inos, size_t n, uint32_t *ret_queued, bool *ret_found) {
        struct unix_diag_req req = {
                .sdiag_family = AF_UNIX,
                .udiag_states = 1U << TCP_LISTEN, /* listening sockets only: the dump stays short */
                .udiag_show = UDIAG_SHOW_RQLEN,
        };
        _cleanup_free_ Wanted *wanted = NULL;
        DumpAnswer a;

        for (size_t i = 0; i < n; i++) {
                ret_queued[i] = 0;
                ret_found[i] = false;
        }
        if (n == 0)
                return 0;
        wanted = calloc(n, sizeof *wanted);
        if (!wanted)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                wanted[i] = (Wanted) { .ino = inos[i], .index = i };
        qsort(wanted, n, sizeof *wanted, wanted_compare);
        a = (DumpAnswer) { .wanted = wanted, .n = n, .queued = ret_queued, .found = ret_found };

        /* the dump's parts up to NLMSG_DONE */
        return ask(d, NLM_F_DUMP, &req, on_dump_valid, &a);
}
