/*
 * Process groups across MPI ranks (starfold/mpi.h), run by tests/mpi/run-mpi.sh under mpirun with 2,
 * 3 and 4 ranks: `test_group K` with K = the ranks per faked node (0: the ranks sharing memory, all of
 * them on this one machine).
 *
 * Every rank runs the same CUnit suite; failures are summed over the ranks and rank 0 prints the
 * total, so the exit status is the same on every rank. Expected values follow from the launch alone:
 * rank and size are MPI's, the node of rank r is r / K (K > 0) or 0 (one machine), each rank brings
 * the 2 devices its context was made with.
 */
#include "config.h"

#include <CUnit/Basic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starfold.h>
#include <starfold/mpi.h>

static starfold_context_t ctx;
static int ranks_per_node;
static int world_rank, world_size;

static void test_create(void)
{
    starfold_group_options_t o;
    starfold_group_options_init(&o);
    o.ranks_per_node = ranks_per_node;
    starfold_group_t g = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_group_create(ctx, MPI_COMM_WORLD, &o, &g), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_group_rank(g), world_rank);
    CU_ASSERT_EQUAL(starfold_group_size(g), world_size);
    CU_ASSERT_PTR_EQUAL(starfold_group_context(g), ctx);
    const int nodes = ranks_per_node > 0 ? (world_size + ranks_per_node - 1) / ranks_per_node : 1;
    CU_ASSERT_EQUAL(starfold_group_num_nodes(g), nodes);
    for (int r = 0; r < world_size; r++) {
        CU_ASSERT_EQUAL(starfold_group_node(g, r), ranks_per_node > 0 ? r / ranks_per_node : 0);
        CU_ASSERT_EQUAL(starfold_group_num_devices(g, r), 2);
    }
    CU_ASSERT_EQUAL(starfold_group_node(g, -1), -1);
    CU_ASSERT_EQUAL(starfold_group_node(g, world_size), -1);
    CU_ASSERT_EQUAL(starfold_group_num_devices(g, world_size), -1);
    starfold_group_destroy(g);
    CU_ASSERT_EQUAL(starfold_group_rank(NULL), -1);
    CU_ASSERT_EQUAL(starfold_group_size(NULL), 0);
    starfold_group_destroy(NULL);
}

/* Two groups at once over different communicators (StarPU-MPI shared, stopped with the last). */
static void test_two_groups(void)
{
    MPI_Comm half = MPI_COMM_NULL;
    CU_ASSERT_EQUAL_FATAL(MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half), MPI_SUCCESS);
    starfold_group_t all = NULL, part = NULL;
    CU_ASSERT_EQUAL_FATAL(starfold_group_create(ctx, MPI_COMM_WORLD, NULL, &all), STARFOLD_OK);
    CU_ASSERT_EQUAL_FATAL(starfold_group_create(ctx, half, NULL, &part), STARFOLD_OK);
    CU_ASSERT_EQUAL(starfold_group_size(part), (world_size + 1 - world_rank % 2) / 2);
    CU_ASSERT_EQUAL(starfold_group_rank(part), world_rank / 2);
    starfold_group_destroy(part);
    starfold_group_destroy(all);
    MPI_Comm_free(&half);
}

/*
 * Bad arguments on one rank fail every rank, with the same status, and create nothing: a negative
 * ranks_per_node on the last rank; ranks_per_node differing between ranks; a NULL output on rank 0.
 */
static void test_collective_errors(void)
{
    starfold_group_options_t o;
    starfold_group_options_init(&o);
    starfold_group_t g = (starfold_group_t)(uintptr_t)0x5eed;
    if (world_rank == world_size - 1) o.ranks_per_node = -1;
    CU_ASSERT_EQUAL(starfold_group_create(ctx, MPI_COMM_WORLD, &o, &g), STARFOLD_ERR_INVALID_ARGUMENT);
    char want[64];
    snprintf(want, sizeof want, "rank %d refused its arguments", world_size - 1);
    const char *expected = world_rank == world_size - 1 ? "ranks_per_node must be >= 0" : want;
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), expected));
    CU_ASSERT_PTR_EQUAL(g, (starfold_group_t)(uintptr_t)0x5eed);

    o.ranks_per_node = world_rank == 1 ? 2 : 1;
    CU_ASSERT_EQUAL(starfold_group_create(ctx, MPI_COMM_WORLD, &o, &g), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "rank 1 gives other options than rank 0"));
    CU_ASSERT_PTR_EQUAL(g, (starfold_group_t)(uintptr_t)0x5eed);

    starfold_group_options_init(&o);
    CU_ASSERT_EQUAL(starfold_group_create(ctx, MPI_COMM_WORLD, &o, world_rank == 0 ? NULL : &g),
                    STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_EQUAL(g, (starfold_group_t)(uintptr_t)0x5eed);
    CU_ASSERT_EQUAL(starfold_group_create(ctx, MPI_COMM_NULL, &o, &g), STARFOLD_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(starfold_last_error(), "MPI_COMM_NULL"));
    /* Still usable afterwards: nothing was left half-made. */
    CU_ASSERT_EQUAL_FATAL(starfold_group_create(ctx, MPI_COMM_WORLD, &o, &g), STARFOLD_OK);
    starfold_group_destroy(g);
}

int main(int argc, char **argv)
{
    int provided = 0;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) return 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    ranks_per_node = argc > 1 ? atoi(argv[1]) : 0;
    int failed = 0;
    if (provided < MPI_THREAD_MULTIPLE) {
        if (world_rank == 0) fprintf(stderr, "test_group: this MPI gives no MPI_THREAD_MULTIPLE (%d)\n", provided);
        MPI_Finalize();
        return 77;
    }
    starfold_context_options_t co;
    starfold_context_options_init(&co);
    co.mode = STARFOLD_DEVICES_CPU;
    co.num_devices = 2;
    if (starfold_context_create(&co, &ctx) != STARFOLD_OK) {
        fprintf(stderr, "test_group: rank %d: cannot create the context: %s\n", world_rank, starfold_last_error());
        failed = 1;
    } else if (CU_initialize_registry() == CUE_SUCCESS) {
        CU_pSuite s = CU_add_suite("process groups (starfold/mpi.h)", NULL, NULL);
        CU_add_test(s, "create: rank, size, nodes, devices", test_create);
        CU_add_test(s, "two groups, StarPU-MPI shared", test_two_groups);
        CU_add_test(s, "one rank's bad arguments fail every rank", test_collective_errors);
        CU_basic_set_mode(world_rank == 0 ? CU_BRM_VERBOSE : CU_BRM_SILENT);
        CU_basic_run_tests();
        failed = (int)CU_get_number_of_failures();
        if (failed) fprintf(stderr, "test_group: rank %d: %d failures\n", world_rank, failed);
        CU_cleanup_registry();
        starfold_context_destroy(ctx);
    } else {
        failed = 1;
    }
    int total = 0;
    MPI_Allreduce(&failed, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (world_rank == 0)
        printf("test_group: %d ranks, ranks_per_node %d: %d failures over all ranks\n", world_size, ranks_per_node, total);
    MPI_Finalize();
    return total ? 1 : 0;
}
