/* SPDX-License-Identifier: MIT */
#include "fake-frontend.h"

static bool worker_traffic(void *userdata, unsigned worker, WorkerTraffic *ret) {
        FakeFrontend *f = userdata;

        if (worker >= FAKE_FRONTEND_WORKERS || !f->known[worker]) {
                *ret = (WorkerTraffic) {};
                return false;
        }
        *ret = f->traffic[worker];
        return true;
}

static void totals(void *userdata, FrontendTotals *ret) {
        *ret = ((FakeFrontend *) userdata)->totals;
}

static const FrontendHooks hooks = {
        .worker_traffic = worker_traffic,
        .totals = totals,
};

void fake_frontend_attach(FakeFrontend *f, StatusView *v) {
        v->frontend = &hooks;
        v->frontend_data = f;
}
