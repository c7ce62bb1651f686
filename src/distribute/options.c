/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Communication options: TensorFlow's tf.distribute.experimental.CommunicationOptions
 * (collective_util.Options) and its merge rule.
 *
 *     Options(bytes_per_pack=0, timeout_seconds=None, implementation=AUTO)
 *     a.merge(b) = copy of a, then every field of b that is not its default
 *
 * TensorFlow's "no timeout" is None; starfold's is 0 (TensorFlow documents 0 as "disables" too) or
 * +infinity, which means the same: wait as long as it takes. A timeout is in force only when it is
 * finite and > 0 (starfold__timeout_in_force()), the one rule every wait follows.
 */
#include "config.h"

#include <math.h>

#include "base/common.h"
#include "distribute/distribute.h"

static const char *const impl_names[] = { "AUTO", "RING", "NCCL" };
#define NUM_IMPLS ((int)(sizeof impl_names / sizeof impl_names[0]))

int starfold__timeout_in_force(double seconds)
{
    return seconds > 0 && isfinite(seconds);
}

STARFOLD_API void starfold_communication_options_init(starfold_communication_options_t *options)
{
    if (!options) return;
    memset(options, 0, sizeof *options);
    options->implementation = STARFOLD_COMMUNICATION_AUTO;
}

STARFOLD_API const char *starfold_communication_implementation_name(starfold_communication_implementation_t impl)
{
    return (int)impl >= 0 && (int)impl < NUM_IMPLS ? impl_names[impl] : "unknown";
}

STARFOLD_API starfold_status_t starfold_communication_implementation_from_string(
    const char *name, starfold_communication_implementation_t *impl)
{
    if (!name || !impl)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_communication_implementation_from_string: NULL argument");
    /* TensorFlow: CommunicationImplementation(implementation.upper()). */
    for (int i = 0; i < NUM_IMPLS; i++)
        if (starfold__streq_nocase(name, impl_names[i])) {
            *impl = (starfold_communication_implementation_t)i;
            return STARFOLD_OK;
        }
    return starfold__error(STARFOLD_ERR_NOT_FOUND,
                    "implementation should be a tf.distribute.experimental.CommunicationImplementation: "
                    "'%s' is none of AUTO, RING, NCCL",
                    name);
}

STARFOLD_API starfold_status_t starfold_communication_options_validate(const starfold_communication_options_t *options)
{
    if (!options) return STARFOLD_OK;
    if (options->bytes_per_pack < 0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "Argument `bytes_per_pack` must be >=0, Received %lld",
                        (long long)options->bytes_per_pack);
    if (isnan(options->timeout_seconds) || options->timeout_seconds < 0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                               "Argument `timeout_seconds` must be >= 0 (0 or infinity = no timeout), Received %g",
                               options->timeout_seconds);
    if ((int)options->implementation < 0 || (int)options->implementation >= NUM_IMPLS)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT,
                        "implementation should be a tf.distribute.experimental.CommunicationImplementation, got %d",
                        (int)options->implementation);
    if (options->promote_integer_mean != 0 && options->promote_integer_mean != 1)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "promote_integer_mean must be 0 or 1, got %d",
                        options->promote_integer_mean);
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_communication_options_create(int64_t bytes_per_pack, double timeout_seconds,
                                                                     const char *implementation,
                                                                     starfold_communication_options_t *options)
{
    if (!options) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_communication_options_create: NULL options");
    starfold_communication_options_t o;
    starfold_communication_options_init(&o);
    o.bytes_per_pack = bytes_per_pack;
    o.timeout_seconds = timeout_seconds;
    starfold_status_t st;
    if (implementation &&
        (st = starfold_communication_implementation_from_string(implementation, &o.implementation)) != STARFOLD_OK)
        return st;
    if ((st = starfold_communication_options_validate(&o)) != STARFOLD_OK) return st;
    *options = o;
    return STARFOLD_OK;
}

STARFOLD_API starfold_status_t starfold_communication_options_merge(const starfold_communication_options_t *self,
                                                                    const starfold_communication_options_t *other,
                                                                    starfold_communication_options_t *merged)
{
    if (!merged) return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_communication_options_merge: NULL result");
    starfold_status_t st;
    if ((st = starfold_communication_options_validate(self)) != STARFOLD_OK) return st;
    if ((st = starfold_communication_options_validate(other)) != STARFOLD_OK) return st;
    starfold_communication_options_t m;
    starfold_communication_options_init(&m);
    if (self) m = *self;
    if (other) {
        if (other->bytes_per_pack != 0) m.bytes_per_pack = other->bytes_per_pack;
        if (other->timeout_seconds != 0) m.timeout_seconds = other->timeout_seconds;
        if (other->implementation != STARFOLD_COMMUNICATION_AUTO) m.implementation = other->implementation;
        if (other->promote_integer_mean != 0) m.promote_integer_mean = other->promote_integer_mean;
    }
    *merged = m;
    return STARFOLD_OK;
}
