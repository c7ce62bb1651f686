/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * starfold_group_all_reduce() against MPI_Allreduce on the same bytes, side by side in one run
 * (`make bench-mpi`, which runs it under mpirun with 2 and 4 ranks; BENCHMARKS.md records it):
 *
 *   bench_allreduce DEVICES           one row per case, rank 0 prints:
 *     64 MiB per rank, 1 tensor       starfold (DEVICES replicas per rank) vs MPI_Allreduce of 64 MiB
 *     1,000 x 4 KiB per rank          starfold (one call, 1,000 tensors) vs one fused MPI_Allreduce
 *
 * Times are medians of 10 after 3 warm-ups, each iteration ended by a barrier on every rank; the ratio
 * is starfold's over MPI's. Float32 SUM. Not a test: it asserts nothing but that the results are
 * right (it checks the first and last element of every output).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <starfold.h>
#include <starfold/mpi.h>

#define WARMUP 3
#define ITERS 10

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *t) { qsort(t, ITERS, sizeof *t, cmp); return t[ITERS / 2]; }

int main(int argc, char **argv)
{
    int provided = 0, rank = 0, size = 1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int ndev = argc > 1 ? atoi(argv[1]) : 1;
    starfold_context_options_t o;
    starfold_context_options_init(&o);
    o.mode = STARFOLD_DEVICES_CPU;
    o.num_devices = ndev;
    starfold_context_t ctx = NULL;
    starfold_group_t g = NULL;
    if (starfold_context_create(&o, &ctx) != STARFOLD_OK || starfold_group_create(ctx, MPI_COMM_WORLD, NULL, &g) != STARFOLD_OK) {
        fprintf(stderr, "bench_allreduce: rank %d: %s\n", rank, starfold_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const struct { const char *name; size_t nt, count; } cases[] = {
        { "64 MiB x 1", 1, (size_t)16 << 20 },
        { "4 KiB x 1000", 1000, 1024 },
    };
    if (rank == 0)
        printf("# %d ranks x %d devices (CPU workers), float32 sum, median of %d after %d warm-ups\n"
               "# %-14s %14s %14s %10s %8s\n",
               size, ndev, ITERS, WARMUP, "case", "starfold_us", "MPI_us", "ratio", "wrong");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const size_t nt = cases[c].nt, count = cases[c].count, total = nt * count;
        starfold_tensor_desc_t *t = malloc(sizeof *t * nt);
        starpu_data_handle_t *in = malloc(sizeof *in * nt * (size_t)ndev), *out = malloc(sizeof *out * nt * (size_t)ndev);
        float *buf = malloc(sizeof(float) * count), *mpi = malloc(sizeof(float) * total);
        for (size_t i = 0; i < count; i++) buf[i] = 1.0f;
        for (size_t k = 0; k < nt; k++) t[k] = (starfold_tensor_desc_t){ STARFOLD_FLOAT32, count };
        for (int d = 0; d < ndev; d++)
            for (size_t k = 0; k < nt; k++) {
                starfold_vector_create(ctx, d, STARFOLD_FLOAT32, count, &in[d * nt + k]);
                starfold_vector_create(ctx, d, STARFOLD_FLOAT32, count, &out[d * nt + k]);
                starfold_vector_write(in[d * nt + k], buf, count * sizeof(float));
            }
        double ts[ITERS], tm[ITERS];
        long wrong = 0;
        for (int it = 0; it < WARMUP + ITERS; it++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = now_s();
            if (starfold_group_all_reduce(g, STARFOLD_OP_SUM, nt, t, in, out) != STARFOLD_OK) wrong = -1;
            MPI_Barrier(MPI_COMM_WORLD);
            if (it >= WARMUP) ts[it - WARMUP] = now_s() - t0;
            for (size_t i = 0; i < total; i++) mpi[i] = 1.0f;
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = now_s();
            MPI_Allreduce(MPI_IN_PLACE, mpi, (int)total, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
            if (it >= WARMUP) tm[it - WARMUP] = now_s() - t0;
        }
        const float want = (float)(ndev * size);
        for (int d = 0; d < ndev && wrong >= 0; d++)
            for (size_t k = 0; k < nt; k++) {
                starfold_vector_read(out[d * nt + k], buf, count * sizeof(float));
                wrong += (buf[0] != want) + (buf[count - 1] != want);
            }
        long all_wrong = 0;
        MPI_Reduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        const double s = median(ts), m = median(tm);
        if (rank == 0) printf("  %-14s %14.1f %14.1f %10.2f %8ld\n", cases[c].name, s * 1e6, m * 1e6, s / m, all_wrong);
        for (size_t k = 0; k < nt * (size_t)ndev; k++) {
            starfold_vector_destroy(ctx, in[k]);
            starfold_vector_destroy(ctx, out[k]);
        }
        free(t), free(in), free(out), free(buf), free(mpi);
    }
    starfold_group_destroy(g);
    starfold_context_destroy(ctx);
    MPI_Finalize();
    return 0;
}
