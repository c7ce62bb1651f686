/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Sparse gradients and gathers, as a TensorFlow program has them, in C: an embedding table's
 * gradient is an IndexedSlices (only the rows a batch looked up), and the replicas' batches differ.
 *
 *   strategy = tf.distribute.MirroredStrategy(3 devices)
 *   # replica r looked up tokens ids[r] in a table of 6 rows of 2 elements; its gradient rows are
 *   # IndexedSlices(values = one row per token, indices = ids[r], dense_shape = [6, 2])
 *   #   replica 0: ids [1 4]    rows [[1 1] [2 2]]
 *   #   replica 1: ids [4]      rows [[3 3]]
 *   #   replica 2: ids [0 1 5]  rows [[4 4] [5 5] [6 6]]
 *   g = strategy.extended.reduce_to(ReduceOp.SUM, grads, "/cpu:0")   # IndexedSlices, 6 rows
 *   tf.convert_to_tensor(g)  -> [[4 4] [6 6] [0 0] [0 0] [5 5] [6 6]]  (rows 1 and 4 added)
 *
 *   def step():   # every replica learns every replica's batch size
 *       sizes = ctx.all_gather(tf.constant([len(ids[r])]), axis=0)       -> [2 1 3]
 *   strategy.gather(per_replica_sizes, axis=0)                           -> [2 1 3]
 *
 * Devices: logical devices on StarPU's CPU workers. Exit status 0 when every result is TensorFlow's,
 * 1 otherwise, 77 when StarPU has no worker.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starfold.h>

#define N 3
#define ROWS 6
#define WIDTH 2

static int failed;

static void expect(const char *what, const float *got, const float *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (fabsf(got[i] - want[i]) > 1e-6f) {
            printf("  %s: element %zu is %g, TensorFlow gives %g\n", what, i, got[i], want[i]);
            failed = 1;
            return;
        }
    printf("  %s: as TensorFlow\n", what);
}

/* Each replica's batch size, all-gathered: every replica gets [2 1 3]. */
static starfold_status_t step(starfold_replica_context_t rc, void *arg)
{
    const float *sizes = arg;
    const int r = starfold_replica_context_replica_id_in_sync_group(rc);
    starfold_value_t mine = NULL, all = NULL;
    starfold_status_t st = starfold_replica_context_create_value(rc, STARFOLD_FLOAT32, 1, &sizes[r], &mine);
    if (st == STARFOLD_OK) st = starfold_replica_context_all_gather(rc, mine, 0, NULL, &all);
    float got[N] = { 0 };
    if (st == STARFOLD_OK) st = starfold_value_read(all, 0, got, sizeof got);
    if (st == STARFOLD_OK && (got[0] != sizes[0] || got[1] != sizes[1] || got[2] != sizes[2])) {
        printf("  all_gather on replica %d: [%g %g %g], TensorFlow gives [2 1 3]\n", r, got[0], got[1], got[2]);
        failed = 1;
    }
    if (st == STARFOLD_OK) st = starfold_replica_context_set_result(rc, mine);
    starfold_value_destroy(all);
    starfold_value_destroy(mine);
    return st;
}

int main(void)
{
    starfold_context_options_t co;
    starfold_context_options_init(&co);
    co.mode = STARFOLD_DEVICES_CPU;
    co.num_devices = N;
    starfold_context_t ctx = NULL;
    starfold_status_t st = starfold_context_create(&co, &ctx);
    if (st == STARFOLD_ERR_NO_DEVICE) {
        fprintf(stderr, "sparse_embedding: %s\n", starfold_last_error());
        return 77;
    }
    if (st != STARFOLD_OK) {
        fprintf(stderr, "sparse_embedding: %s\n", starfold_last_error());
        return 1;
    }
    const int devices[N] = { 0, 1, 2 };
    starfold_strategy_t strategy = NULL;
    starfold_indexed_slices_t grads = NULL, sum = NULL;
    starfold_value_t dense = NULL, sizes_pr = NULL, gathered = NULL;
    if ((st = starfold_mirrored_strategy_create(ctx, NULL, N, devices, NULL, &strategy)) != STARFOLD_OK) goto out;

    /* The replicas' gradient rows: IndexedSlices of different row counts. */
    const size_t rows[N] = { 2, 1, 3 };
    const float v0[] = { 1, 1, 2, 2 }, v1[] = { 3, 3 }, v2[] = { 4, 4, 5, 5, 6, 6 };
    const int64_t i0[] = { 1, 4 }, i1[] = { 4 }, i2[] = { 0, 1, 5 };
    const void *values[N] = { v0, v1, v2 };
    const int64_t *indices[N] = { i0, i1, i2 };
    if ((st = starfold_indexed_slices_create(ctx, STARFOLD_VALUE_PER_REPLICA, N, devices, STARFOLD_FLOAT32, ROWS, WIDTH, rows,
                                             values, indices, &grads)) != STARFOLD_OK)
        goto out;

    printf("reduce_to(SUM) of IndexedSlices onto the host, then convert_to_tensor:\n");
    const starfold_destination_t host = starfold_destination_host();
    if ((st = starfold_strategy_reduce_to_indexed_slices(strategy, STARFOLD_OP_SUM, grads, &host, NULL, &sum)) != STARFOLD_OK)
        goto out;
    float cat[12];
    int64_t ids[6];
    if ((st = starfold_indexed_slices_read(sum, 0, cat, sizeof cat, ids, sizeof ids)) != STARFOLD_OK) goto out;
    static const float want_cat[12] = { 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6 };
    static const float want_ids[6] = { 1, 4, 4, 0, 1, 5 };
    float idf[6];
    for (int k = 0; k < 6; k++) idf[k] = (float)ids[k];
    expect("values, replica order", cat, want_cat, 12);
    expect("indices, replica order", idf, want_ids, 6);
    if ((st = starfold_indexed_slices_densify(sum, 0, &dense)) != STARFOLD_OK) goto out;
    float table[ROWS * WIDTH];
    if ((st = starfold_value_read(dense, 0, table, sizeof table)) != STARFOLD_OK) goto out;
    static const float want_table[ROWS * WIDTH] = { 4, 4, 6, 6, 0, 0, 0, 0, 5, 5, 6, 6 };
    expect("dense gradient (duplicate rows added)", table, want_table, ROWS * WIDTH);

    printf("all_gather of each replica's batch size, then strategy.gather:\n");
    const float sizes[N] = { 2, 1, 3 };
    if ((st = starfold_strategy_run_results(strategy, step, (void *)sizes, &sizes_pr)) != STARFOLD_OK) goto out;
    printf("  all_gather on every replica: %s\n", failed ? "wrong" : "as TensorFlow");
    if ((st = starfold_strategy_gather(strategy, sizes_pr, 0, &gathered)) != STARFOLD_OK) goto out;
    float g[N];
    if ((st = starfold_value_read(gathered, 0, g, sizeof g)) != STARFOLD_OK) goto out;
    expect("strategy.gather", g, sizes, N);
out:
    if (st != STARFOLD_OK) {
        fprintf(stderr, "sparse_embedding: %s: %s\n", starfold_status_string(st), starfold_last_error());
        failed = 1;
    }
    starfold_value_destroy(gathered);
    starfold_value_destroy(sizes_pr);
    starfold_value_destroy(dense);
    starfold_indexed_slices_destroy(sum);
    starfold_indexed_slices_destroy(grads);
    starfold_strategy_destroy(strategy);
    starfold_context_destroy(ctx);
    printf("%s\n", failed ? "FAILED" : "all results are TensorFlow's");
    return failed;
}
