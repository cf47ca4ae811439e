/* SPDX-License-Identifier: MIT */
#pragma once

/* What bus.c (the connection, the methods, the signals) and bus-properties.c (what the properties say)
 * share. */

#include <stdint.h>
#include <systemd/sd-bus.h>

#include "bus.h"

typedef enum BusProperty {
        BUS_PROPERTY_WORKERS,
        BUS_PROPERTY_USERS,
        BUS_PROPERTY_HOLDS,
        BUS_PROPERTY_DRAIN,
        BUS_PROPERTY_COUNTERS,
        BUS_PROPERTY_SCALE_TARGET,
        BUS_PROPERTY_ROLLING_RELOAD,
        BUS_PROPERTY_REQUEST_RATE,
        _BUS_PROPERTY_MAX,
        _BUS_PROPERTY_INVALID = -EINVAL,
} BusProperty;

const char *bus_property_to_string(BusProperty p);

struct Bus {
        sd_bus *bus;
        sd_bus_slot *object;
        sd_event_source *tick;
        char name[BUS_API_NAME_MAX];
        char *group;
        uid_t own_uid;

        const Config *config;
        Pool *pool;
        Capacity *capacity;
        Compaction *compaction;
        const Rollout *rollout;
        Surface *surface;
        const StatusView *status;
        int (*reload)(void *userdata, char **ret_error);
        void *userdata;

        uint64_t fingerprint[_BUS_PROPERTY_MAX]; /* of what each property showed when last announced */
        unsigned scale_target;                   /* ScaleTo shrinking towards it; 0: none */
        uint64_t moves;                          /* moves that switched a user */
};

/* The object's property getters (sd_bus_property_get_t), userdata the Bus. */
int bus_property_get_workers(sd_bus *bus, const char *path, const char *interface, const char *property,
                             sd_bus_message *reply, void *userdata, sd_bus_error *error);
int bus_property_get_users(sd_bus *bus, const char *path, const char *interface, const char *property,
                           sd_bus_message *reply, void *userdata, sd_bus_error *error);
int bus_property_get_holds(sd_bus *bus, const char *path, const char *interface, const char *property,
                           sd_bus_message *reply, void *userdata, sd_bus_error *error);
int bus_property_get_drain(sd_bus *bus, const char *path, const char *interface, const char *property,
                           sd_bus_message *reply, void *userdata, sd_bus_error *error);
int bus_property_get_rolling_reload(sd_bus *bus, const char *path, const char *interface, const char *property,
                                    sd_bus_message *reply, void *userdata, sd_bus_error *error);
int bus_property_get_request_rate(sd_bus *bus, const char *path, const char *interface, const char *property,
                                  sd_bus_message *reply, void *userdata, sd_bus_error *error);
int bus_property_get_counters(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error);

/* A cheap digest of what property p shows now (a timer's elapsed time left out): it changed when this
 * did. */
uint64_t bus_property_fingerprint(const Bus *b, BusProperty p);

/* Workers that stay: alive, not retiring, not being drained (what ScaleTo counts). */
unsigned bus_workers_staying(const Pool *p);
