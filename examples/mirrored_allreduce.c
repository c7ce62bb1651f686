/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * The README's program: MirroredStrategy over two devices, each replica's gradients all-reduced with
 * the replica context's all_reduce (TensorFlow's tf.distribute.get_replica_context().all_reduce), the
 * sums checked on every replica. tests/check-readme.sh keeps the README's copy the same as this file
 * from the #include on. Exit 0 when every replica holds the sum, 1 otherwise, 77 without StarPU workers.
 */
#include <stdio.h>
#include <starfold.h>

enum { N = 1000 }; /* elements per gradient */

/* One replica: its gradient (replica r holds r + 1 everywhere), all-reduced, checked. */
static starfold_status_t step(starfold_replica_context_t rc, void *arg)
{
    int *wrong = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    const int replicas = starfold_replica_context_num_replicas_in_sync(rc);
    float g[N], sum[N];
    for (int i = 0; i < N; i++) g[i] = (float)(r + 1);
    starfold_value_t grad = NULL, reduced = NULL;
    starfold_status_t st = starfold_replica_context_create_value(rc, STARFOLD_FLOAT32, N, g, &grad);
    if (st == STARFOLD_OK) st = starfold_replica_context_all_reduce(rc, STARFOLD_OP_SUM, 1, &grad, NULL, &reduced);
    if (st == STARFOLD_OK) st = starfold_value_read(reduced, 0, sum, sizeof sum);   /* waits for it */
    for (int i = 0; st == STARFOLD_OK && i < N; i++)
        if (sum[i] != (float)(replicas * (replicas + 1) / 2)) wrong[r]++;
    starfold_value_destroy(reduced);
    starfold_value_destroy(grad);
    return st;
}

int main(void)
{
    starfold_context_options_t o;                 /* two logical devices on StarPU's CPU workers */
    starfold_context_options_init(&o);
    o.mode = STARFOLD_DEVICES_CPU;
    o.num_devices = 2;
    starfold_context_t ctx = NULL;
    starfold_strategy_t s = NULL;
    if (starfold_context_create(&o, &ctx) != STARFOLD_OK) return 77;
    int wrong[2] = { 0, 0 };
    starfold_status_t st = starfold_mirrored_strategy_create(ctx, NULL, 0, NULL, NULL, &s);
    if (st == STARFOLD_OK) st = starfold_strategy_run(s, step, wrong);
    printf("all_reduce over %d replicas: %s\n", starfold_context_num_devices(ctx),
           st != STARFOLD_OK ? starfold_last_error() : wrong[0] + wrong[1] ? "WRONG" : "every element right");
    starfold_strategy_destroy(s);
    starfold_context_destroy(ctx);
    return st == STARFOLD_OK && !wrong[0] && !wrong[1] ? 0 : 1;
}
