/**
 * @file starfold/mpi.h
 * @brief Process groups: starfold across MPI ranks, over StarPU-MPI (library libstarfold_mpi,
 *        pkg-config starfold_mpi).
 *
 * A group is the set of processes that reduce together, as an MPI communicator is: every rank of the
 * communicator creates it, collectively, over its own starfold context (its local devices), and
 * destroys it, collectively, before its context. The group knows each rank's node (the ranks that
 * share memory, or a forced number of consecutive ranks per node so that one machine can play several
 * nodes in tests) and each rank's device count; collectives across ranks are built on it.
 *
 * Initialisation order, as StarPU-MPI needs it:
 *
 *     MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);   the caller's
 *     starfold_context_create(&copt, &ctx);                            starts StarPU
 *     starfold_group_create(ctx, MPI_COMM_WORLD, &gopt, &group);       starts StarPU-MPI (first group)
 *     ...
 *     starfold_group_destroy(group);                                   stops StarPU-MPI (last group)
 *     starfold_context_destroy(ctx);
 *     MPI_Finalize();
 *
 * The group duplicates the communicator twice: one for StarPU-MPI's transfers, one for starfold's own
 * agreement between ranks, so neither ever matches a message of the application's. Both return MPI
 * errors instead of aborting (MPI_ERRORS_RETURN).
 *
 * Errors are collective: a call that fails because of one rank's arguments fails on every rank, with
 * the same status and a message naming the rank, so that no rank waits for another that gave up.
 *
 * This header includes <mpi.h>; <starfold.h> does not include it (as <starpu.h> leaves <starpu_mpi.h>
 * out), so programs without MPI are unaffected.
 */
#ifndef STARFOLD_MPI_H
#define STARFOLD_MPI_H

#include <mpi.h>
#include <starfold/common.h>
#include <starfold/exec.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Opaque process group. */
typedef struct starfold_group *starfold_group_t;

/** @brief How a group is made. Initialise with starfold_group_options_init(). */
typedef struct starfold_group_options {
    /**
     * 0 (default): a node is the set of ranks that share memory (MPI_Comm_split_type with
     * MPI_COMM_TYPE_SHARED). k > 0: ranks 0..k-1 are node 0, k..2k-1 node 1, and so on, whatever the
     * machines (one machine playing several nodes). Every rank must give the same value.
     */
    int ranks_per_node;
    /**
     * 0 (default): starfold starts StarPU-MPI with the first group of the process (over a duplicate of
     * its communicator) and stops it with the last. 1: the application started StarPU-MPI itself
     * (starpu_mpi_init_conf() or similar) and stops it itself.
     */
    int starpu_mpi_started_by_caller;
} starfold_group_options_t;

/** @brief Fills @p options with the defaults. */
STARFOLD_API void starfold_group_options_init(starfold_group_options_t *options);

/**
 * @brief Creates a group of every rank of @p comm, collectively: every rank of @p comm calls it.
 *
 * Learns each rank's node and device count, duplicates @p comm (twice) and starts StarPU-MPI on the
 * first group of the process.
 * @param [in]  context this rank's context: its devices are the ones it brings to the group
 * @param [in]  comm an intra-communicator; MPI must be initialised with MPI_THREAD_MULTIPLE
 * @param [in]  options NULL for the defaults
 * @param [out] group the new group, owned by the caller (starfold_group_destroy())
 * @return ::STARFOLD_ERR_INVALID_ARGUMENT on every rank for a NULL argument, MPI not initialised or
 *         below MPI_THREAD_MULTIPLE, MPI_COMM_NULL, a negative ranks_per_node, or ranks that give
 *         different options (the message names the first rank that differs);
 *         ::STARFOLD_ERR_RUNTIME when MPI or StarPU-MPI fails. Nothing is created on failure.
 */
STARFOLD_API starfold_status_t starfold_group_create(starfold_context_t context, MPI_Comm comm,
                                                     const starfold_group_options_t *options,
                                                     starfold_group_t *group);

/**
 * @brief Destroys a group, collectively (every rank of the group calls it, before destroying its
 *        context). Stops StarPU-MPI with the process's last group when starfold started it.
 * @param [in] group the group, or NULL (no-op)
 */
STARFOLD_API void starfold_group_destroy(starfold_group_t group);

/** @brief This process's rank in the group (its rank in the communicator); -1 for NULL. */
STARFOLD_API int starfold_group_rank(starfold_group_t group);
/** @brief Number of ranks; 0 for NULL. */
STARFOLD_API int starfold_group_size(starfold_group_t group);
/** @brief Number of nodes; 0 for NULL. */
STARFOLD_API int starfold_group_num_nodes(starfold_group_t group);
/**
 * @brief The node of @p rank: nodes are numbered 0.. in the order of their lowest rank.
 * @return the node, -1 for NULL or a rank out of range
 */
STARFOLD_API int starfold_group_node(starfold_group_t group, int rank);
/** @brief Devices of @p rank's context; -1 for NULL or a rank out of range. */
STARFOLD_API int starfold_group_num_devices(starfold_group_t group, int rank);
/** @brief This rank's context. */
STARFOLD_API starfold_context_t starfold_group_context(starfold_group_t group);

#ifdef __cplusplus
}
#endif

#endif /* STARFOLD_MPI_H */
