/*
 * Private layout of a topology. Devices 0..n-1, links stored as given (a < b after normalisation).
 * Reference-counted: graphs keep the topology they were compiled for.
 */
#ifndef STARFOLD_SRC_TOPOLOGY_H
#define STARFOLD_SRC_TOPOLOGY_H

#include <starfold/topology.h>

typedef struct sf_device {
    char *name;
    starfold_device_kind_t kind;
    int socket;
} sf_device_t;

struct starfold_topology {
    int refcount;             /* atomic: graphs in other threads may hold references */
    char *name;
    int num_devices;
    sf_device_t *devices;     /* num_devices entries */
    starfold_link_t *links;   /* growable */
    size_t num_links, cap_links;
};

#endif /* STARFOLD_SRC_TOPOLOGY_H */
