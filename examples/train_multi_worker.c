/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Data-parallel training across processes with MultiWorkerMirroredStrategy: the linear regression of
 * train_linear_regression.c (linreg.c), each process over its own devices (4 by default,
 * argument 1 changes it), every replica of every process in sync.
 *
 *     mpirun -np 2 examples/train_multi_worker 4      2 processes x 4 devices = 8 replicas
 *
 * Each process trains the shards of its replicas; the gradients are averaged over all 8 replicas
 * every step (the replica context's all_reduce, across processes through a process group). Exit
 * status 0 on every process when the loss went down 100-fold and every replica of every process ends
 * with bit-identical parameters, 1 otherwise; 77 when MPI gives no MPI_THREAD_MULTIPLE or StarPU no
 * CPU worker.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starfold.h>
#include <starfold/mpi.h>

#include "linreg.h"

int main(int argc, char **argv)
{
    int provided = 0, rank = 0, size = 1;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) return 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int ndev = argc > 1 ? atoi(argv[1]) : 4;
    /* Each process may bring its own number of devices; a bad one on any rank stops every rank here,
     * before the first collective (the others would wait for it there). */
    const int bad_usage = ndev < 1 || ndev > STARFOLD_MAX_DEVICES, local[2] = { bad_usage, provided < MPI_THREAD_MULTIPLE };
    int any[2] = { 0, 0 };
    MPI_Allreduce(local, any, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any[0] || any[1]) {
        if (bad_usage) fprintf(stderr, "train_multi_worker: rank %d: usage: train_multi_worker [DEVICES] (1 to %d)\n", rank,
                               STARFOLD_MAX_DEVICES);
        else if (rank == 0) fprintf(stderr, "train_multi_worker: %s\n", any[0] ? "a rank was given a bad device count"
                                                                             : "skipped: no MPI_THREAD_MULTIPLE");
        MPI_Finalize();
        return any[0] ? 1 : 77;
    }
    /* This process's devices, its group, its strategy. */
    starfold_context_options_t o;
    starfold_context_options_init(&o);
    o.mode = STARFOLD_DEVICES_CPU;
    o.num_devices = ndev;
    starfold_context_t ctx = NULL;
    starfold_group_t group = NULL;
    starfold_strategy_t strategy = NULL;
    int ok = 0;
    starfold_status_t st = starfold_context_create(&o, &ctx);
    /* The group's creation is collective: a rank without its context says so first. */
    int opened = st == STARFOLD_OK, all_opened = 0;
    MPI_Allreduce(&opened, &all_opened, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (st != STARFOLD_OK) fprintf(stderr, "train_multi_worker: rank %d: %s (%s)\n", rank, starfold_status_string(st),
                                   starfold_last_error());
    else if (!all_opened) st = STARFOLD_ERR_RUNTIME, fprintf(stderr, "train_multi_worker: rank %d: another rank could "
                                                                     "not open its devices\n", rank);
    if (st == STARFOLD_OK) st = starfold_group_create(ctx, MPI_COMM_WORLD, NULL, &group);
    if (st == STARFOLD_OK) st = starfold_multi_worker_mirrored_strategy_create(group, NULL, &strategy);
    linreg_result_t res;
    memset(&res, 0, sizeof res);
    if (st == STARFOLD_OK) {
        for (int r = 0; r < rank; r++) res.first_replica += starfold_group_num_devices(group, r);
        /* Rank 0 prints; the others train quietly. */
        FILE *info = rank == 0 ? stdout : fopen("/dev/null", "w");
        st = linreg_train_strategy(strategy, 40, info ? info : stdout, &res);
        if (info && info != stdout) fclose(info);
    }
    /* Every process's parameters, compared bit for bit with rank 0's, when every process trained (the
     * group failed the others alike when one could not; a local failure is agreed on first). */
    float all[64][5];
    int same = 1, trained = st == STARFOLD_OK, all_trained = 0;
    MPI_Allreduce(&trained, &all_trained, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (st == STARFOLD_OK && !all_trained) {
        st = STARFOLD_ERR_RUNTIME;
        fprintf(stderr, "train_multi_worker: rank %d: another rank did not finish training\n", rank);
    }
    if (st == STARFOLD_OK && size <= 64) {
        MPI_Allgather(res.theta, 5, MPI_FLOAT, all, 5, MPI_FLOAT, MPI_COMM_WORLD);
        for (int r = 1; r < size; r++) same &= memcmp(all[r], all[0], sizeof all[0]) == 0;
        ok = res.loss_went_down && res.identical && same;
        if (rank == 0)
            printf("parameters identical on every replica of all %d processes (%d replicas): %s\n", size,
                   res.replicas, same && res.identical ? "yes" : "NO");
    } else if (!trained) {
        fprintf(stderr, "train_multi_worker: rank %d: %s (%s)\n", rank, starfold_status_string(st), starfold_last_error());
    }
    starfold_strategy_destroy(strategy);
    starfold_group_destroy(group);
    starfold_context_destroy(ctx);
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
