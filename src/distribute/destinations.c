/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Destinations (TensorFlow's destinations argument) resolved to device lists, and TensorFlow's
 * _devices_match on them.
 */
#include "config.h"

#include <stdio.h>

#include "base/common.h"
#include "distribute/distribute.h"

starfold_status_t starfold__dest_resolve(const starfold_destination_t *d, const char *fn, starfold__dest_t *out)
{
    if (!d) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: NULL destinations", fn);
    memset(out, 0, sizeof *out);
    switch (d->kind) {
    case STARFOLD_DESTINATION_NONE:
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: destinations can not be empty", fn);
    case STARFOLD_DESTINATION_HOST:
        break;
    case STARFOLD_DESTINATION_DEVICE:
        if (d->device == STARFOLD_DEVICE_HOST) break;
        if (d->device < 0)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: destination device %d is not a device", fn, d->device);
        out->n = 1;
        out->devices[0] = d->device;
        return STARFOLD_OK;
    case STARFOLD_DESTINATION_VALUE:
        if (!d->value) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: destinations can not be empty", fn);
        out->ctx = d->value->ctx;
        if (d->value->devices[0] == STARFOLD_DEVICE_HOST) break;
        out->n = d->value->n;
        memcpy(out->devices, d->value->devices, sizeof(int) * (size_t)d->value->n);
        return STARFOLD_OK;
    case STARFOLD_DESTINATION_DEVICES:
        if (d->num_devices < 1 || !d->devices)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: destinations can not be empty", fn);
        if (d->num_devices > STARFOLD_MAX_DEVICES)
            return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: %d destination devices, at most %d", fn,
                                   d->num_devices, STARFOLD_MAX_DEVICES);
        for (int i = 0; i < d->num_devices; i++) {
            if (d->devices[i] < 0)
                return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: destination device %d is not a device%s", fn,
                                       d->devices[i], d->devices[i] == STARFOLD_DEVICE_HOST
                                                          ? " (the host is a destination of its own: starfold_destination_host())"
                                                          : "");
            for (int j = 0; j < i; j++)
                if (d->devices[j] == d->devices[i])
                    return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "%s: destination device %d is listed twice", fn,
                                           d->devices[i]);
        }
        out->n = d->num_devices;
        memcpy(out->devices, d->devices, sizeof(int) * (size_t)d->num_devices);
        return STARFOLD_OK;
    default:
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                        "%s: destinations must be one of a device, devices, a value or the host (kind %d)", fn,
                        (int)d->kind);
    }
    out->n = 1;
    out->devices[0] = STARFOLD_DEVICE_HOST;
    out->host = 1;
    return STARFOLD_OK;
}

int starfold__devices_match(int na, const int *a, int nb, const int *b)
{
    /* Devices within a list are distinct, so equal sets <=> equal sizes and a subset of b. */
    if (na != nb) return 0;
    for (int i = 0; i < na; i++) {
        int found = 0;
        for (int j = 0; j < nb && !found; j++) found = a[i] == b[j];
        if (!found) return 0;
    }
    return 1;
}

