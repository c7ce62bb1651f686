/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Data-parallel training with MirroredStrategy (linreg.c): linear regression by SGD over
 * logical devices on StarPU's CPU workers, 4 by default (argument 1 changes it). Exit status 0 when
 * the loss went down 100-fold and every replica's parameters are bit-identical, 1 otherwise, 77 when
 * StarPU has no CPU worker. `starfold demo` runs the same job on every device (OpenCL too).
 *
 * Built as any program of the installed library (linreg.c's OpenCL kernels need OpenCL's library):
 *
 *     cc train_linear_regression.c linreg.c $(pkg-config --cflags --libs starfold OpenCL) -lm
 */
#include <stdio.h>
#include <stdlib.h>

#include <starfold.h>

#include "linreg.h"

int main(int argc, char **argv)
{
    const int ndev = argc > 1 ? atoi(argv[1]) : 4;
    if (ndev < 1 || ndev > STARFOLD_MAX_DEVICES) {
        fprintf(stderr, "usage: train_linear_regression [DEVICES (1..%d)]\n", STARFOLD_MAX_DEVICES);
        return 1;
    }
    starfold_context_options_t o;
    starfold_context_options_init(&o);
    o.mode = STARFOLD_DEVICES_CPU;
    o.num_devices = ndev;
    starfold_context_t ctx;
    starfold_status_t st = starfold_context_create(&o, &ctx);
    if (st != STARFOLD_OK) {
        fprintf(stderr, "train_linear_regression: skipped, no CPU worker: %s\n", starfold_last_error());
        return 77;
    }
    linreg_result_t res;
    st = linreg_train(ctx, NULL, 40, stdout, &res, NULL);
    starfold_context_destroy(ctx);
    if (st != STARFOLD_OK) {
        fprintf(stderr, "train_linear_regression: %s (%s)\n", starfold_status_string(st), starfold_last_error());
        return 1;
    }
    return res.loss_went_down && res.identical ? 0 : 1;
}
