/* SPDX-License-Identifier: MIT */
#include "report.h"

bool cpu_sample_update(CpuSample *last, const Readings *rd, usec_t now, double *ret_fraction,
                       usec_t *ret_span) {
        CpuSample cur;
        bool comparable;

        if (!rd->has_cpu_usage)
                return false;
        cur = (CpuSample) {
                .valid = true,
                .generation = rd->generation,
                .source = rd->cpu_source,
                .usage_usec = rd->cpu_usage_usec,
                .at = now,
        };
        /* counters of another cgroup or another source measure something else; a counter that went back
         * (procfs: a child died unreaped by us, its time left the tree) cannot give a rate */
        comparable = last->valid && last->generation == cur.generation && last->source == cur.source &&
                     cur.usage_usec >= last->usage_usec && cur.at > last->at;
        if (comparable) {
                *ret_span = cur.at - last->at;
                *ret_fraction = (double) (cur.usage_usec - last->usage_usec) / (double) *ret_span;
        }
        *last = cur;
        return comparable;
}

static ElasticPool__Executor *build_executor(ReportStorage *st, const AppFields *app) {
        if (!app->has_executor)
                return NULL;
        elastic_pool__executor__init(&st->executor);
        st->executor.has_busy = st->executor.has_total = st->executor.has_queue_depth = true;
        st->executor.busy = app->busy;
        st->executor.total = app->total;
        st->executor.queue_depth = app->queue_depth;
        return &st->executor;
}

static ElasticPool__Backlog *build_backlog(ReportStorage *st, const AppFields *app) {
        if (!app->has_backlog)
                return NULL;
        elastic_pool__backlog__init(&st->backlog);
        st->backlog.has_pending = st->backlog.has_outbox = true;
        st->backlog.pending = app->pending;
        st->backlog.outbox = app->outbox;
        return &st->backlog;
}

static ElasticPool__Pressure *build_pressure(ReportStorage *st, const Readings *rd) {
        if (!rd->has_cpu_pressure && !rd->has_memory_pressure)
                return NULL;
        elastic_pool__pressure__init(&st->pressure);
        st->pressure.has_cpu_some_avg10 = rd->has_cpu_pressure;
        st->pressure.cpu_some_avg10 = rd->cpu_some_avg10;
        st->pressure.has_memory_some_avg10 = rd->has_memory_pressure;
        st->pressure.memory_some_avg10 = rd->memory_some_avg10;
        return &st->pressure;
}

static ElasticPool__Load *build_load(ReportStorage *st, const Readings *rd) {
        if (!rd->has_load)
                return NULL;
        elastic_pool__load__init(&st->load);
        st->load.has_avg1 = st->load.has_avg5 = st->load.has_avg15 = true;
        st->load.avg1 = rd->load[0];
        st->load.avg5 = rd->load[1];
        st->load.avg15 = rd->load[2];
        return &st->load;
}

ElasticPool__OccupancyReport *report_build(ReportStorage *st, const ReportInput *in) {
        ElasticPool__OccupancyReport *r = &st->report;
        const Readings *rd = in->readings;
        const AppFields *app = in->app;

        elastic_pool__occupancy_report__init(r);
        r->has_seq = true;
        r->seq = in->seq;
        r->has_monotonic_usec = true;
        r->monotonic_usec = in->monotonic_usec;

        r->has_users = app->has_users;
        r->users = app->users;
        r->has_pages = app->has_pages;
        r->pages = app->pages;
        r->has_connections = app->has_connections;
        r->connections = app->connections;
        r->has_active_users = app->has_active_users;
        r->active_users = app->active_users;
        r->executor = build_executor(st, app);
        r->backlog = build_backlog(st, app);

        /* the source and the span describe the cpu value: present with it, absent without it */
        r->has_cpu = r->has_cpu_source = r->has_interval_usec = in->has_cpu;
        r->cpu = in->cpu;
        r->cpu_source = rd->cpu_source;
        r->interval_usec = in->cpu_span;

        r->has_memory_bytes = r->has_memory_source = rd->has_memory;
        r->memory_bytes = rd->memory_bytes;
        r->memory_source = rd->memory_source;

        r->pressure = build_pressure(st, rd);
        r->load = build_load(st, rd);
        return r;
}

ElasticPool__OccupancyReport *report_build_early(ReportStorage *st, usec_t monotonic_usec, const AppFields *app) {
        ElasticPool__OccupancyReport *r = &st->report;

        if (!app->has_executor)
                return NULL;
        elastic_pool__occupancy_report__init(r);
        r->has_early = r->early = true;
        r->has_monotonic_usec = true;
        r->monotonic_usec = monotonic_usec;
        r->executor = build_executor(st, app);
        return r;
}
