/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * A process group's state (group.c), shared with its collectives (group_allreduce.c). Private.
 */
#ifndef STARFOLD_SRC_EXEC_GROUP_H
#define STARFOLD_SRC_EXEC_GROUP_H

#include <starpu.h>
#include <starfold/mpi.h>

struct starfold_group {
    starfold_context_t ctx;
    MPI_Comm comm;          /* starfold's own duplicate: agreement between ranks (point to point) */
    MPI_Comm data_comm;     /* another duplicate: the collectives' data (MPI_Allreduce in tasks) */
    int rank, size;
    int num_nodes;
    int *node_of;           /* [size] */
    int *devices_of;        /* [size] */
    int total_devices;      /* replicas of all ranks */
    /* The links between ranks (starfold_topology_ranks()): inside a node (kind SHM) and between nodes
     * (kind NETWORK). Defaults until measured at creation or given in the options. */
    starfold_link_t shm_link, network_link;
    int started_spmpi;      /* this group counted in the process's StarPU-MPI users */
    double timeout_seconds;       /* agreement: 0 or infinity = wait forever */
    double stall_warning_seconds; /* agreement: warn once after this long (0 = never) */
    /* collectives (group_allreduce.c) */
    long sequence;          /* collectives this rank entered */
    int broken;             /* a collective timed out: every later call fails at once */
    long notice;            /* the buffer of the "broken" notices this rank sent */
    starfold_topology_t local;    /* this rank's devices as the context sees them (lazily made) */
    starpu_data_handle_t token;   /* orders the MPI tasks as submitted (STARPU_RW), lazily registered */
    int token_value;
};

/* Measures the links between ranks at creation unless @o gives them (group_links.c): collective, on
 * every rank, after the nodes are known; every rank ends with rank 0's values. */
starfold_status_t starfold__group_links(starfold_group_t g, const starfold_group_options_t *o);

/* The group's collectives' resources: waits for the MPI tasks, releases the token and topology. */
void starfold__group_collectives_wait(starfold_group_t g);
void starfold__group_collectives_release(starfold_group_t g);
/* Receives a "broken" notice another rank sent (its rank, the group marked broken), else -1. */
int starfold__group_notice(starfold_group_t g);

#endif /* STARFOLD_SRC_EXEC_GROUP_H */
