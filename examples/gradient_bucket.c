/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Gradients in one bucket per device, all-reduced in place as views, every step of a training loop
 * (starfold_persistent_create_views() once, starfold_persistent_start() per step).
 *
 * A data-parallel program with many small layers (here 300, 256 B to 4 KiB of gradient each) keeps
 * each device's gradients one after another in one vector - PyTorch DDP's gradient buckets, Horovod's
 * fusion buffer - and its backward tasks write each layer's range of it:
 *
 *     bucket_d:  | layer 0 | layer 1 | layer 2 | ...... | layer 299 |      (one StarPU vector per device)
 *                  ^ the backward task of layer l on device d writes [off_l, off_l + n_l)
 *
 * The all-reduce takes each layer as a view {bucket_d, off_l} of its device's bucket, in place, so
 * StarPU tracks one vector per device instead of one per layer and device (StarPU 1.3 spends about a
 * microsecond per handle a task touches), and the compiled graph still reduces every layer.
 * The all-reduce is bound to the buckets once, before the loop (a persistent submission, as MPI-4's
 * MPI_Allreduce_init): the views are checked and the graph's tasks planned there, and each step only
 * starts it. The steps' backward tasks and all-reduces are submitted without waiting in between:
 * StarPU orders each reduction after the last backward task of each bucket, and the next step's
 * backward tasks after the reduction, through the vector.
 *
 * Exit status 0 when every element of every bucket holds the sum over devices, 1 otherwise, 77 when
 * StarPU cannot start.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>
#include <starfold.h>

#define NDEV 4
#define LAYERS 300
#define STEPS 3

/* Gradient of layer l on device d at step s, element i: small integers, exact when summed. */
static float grad_value(int s, int l, int d, size_t i)
{
    return (float)((l * 5 + d * 3 + s * 4 + (int)(i % 7)) % 13) - 6.0f;
}

struct layer_arg {
    int step, layer, device;
    size_t offset, count;
};

/* The backward of one layer on one device: writes its range of the device's bucket. */
static void backward_cpu(void *buffers[], void *cl_arg)
{
    const struct layer_arg *a = cl_arg;
    float *bucket = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
    for (size_t i = 0; i < a->count; i++) bucket[a->offset + i] = grad_value(a->step, a->layer, a->device, i);
}

static struct starpu_codelet backward_cl = {
    .cpu_funcs = { backward_cpu },
    .nbuffers = 1,
    .modes = { STARPU_RW }, /* a part of the bucket: the rest keeps its content */
    .name = "backward_layer",
};

int main(void)
{
    int ok = 0;
    starfold_context_t ctx = NULL;
    starfold_topology_t topo = NULL;
    starfold_graph_t graph = NULL;
    starfold_persistent_t allreduce = NULL;
    starfold_request_t req[STEPS] = { NULL };
    starpu_data_handle_t bucket[NDEV] = { NULL };
    static starfold_tensor_desc_t layers[LAYERS];
    static size_t offset[LAYERS];
    static struct layer_arg args[STEPS][NDEV][LAYERS];
    static starfold_view_t views[NDEV * LAYERS];

    starfold_context_options_t o;
    starfold_context_options_init(&o);
    o.mode = STARFOLD_DEVICES_CPU;
    o.num_devices = NDEV;
    starfold_status_t st = starfold_context_create(&o, &ctx);
    if (st != STARFOLD_OK) {
        fprintf(stderr, "gradient_bucket: skipped: %s\n", starfold_last_error());
        return 77;
    }

    /* Layers of 64 to 1,024 float32, one after another in the bucket. */
    size_t total = 0;
    for (int l = 0; l < LAYERS; l++) {
        layers[l] = (starfold_tensor_desc_t){ STARFOLD_FLOAT32, 64 + (size_t)(l * 37 % 961) };
        offset[l] = total;
        total += layers[l].count;
    }
    int devices[NDEV];
    for (int d = 0; d < NDEV; d++) {
        devices[d] = d;
        if ((st = starfold_vector_create(ctx, d, STARFOLD_FLOAT32, total, &bucket[d])) != STARFOLD_OK) goto out;
        for (int l = 0; l < LAYERS; l++) views[(size_t)d * LAYERS + l] = (starfold_view_t){ bucket[d], offset[l] };
    }

    /* The all-reduce of the 300 layers, compiled for the context's devices and bound to the buckets
     * once; the graph is not needed after that. */
    if ((st = starfold_context_topology(ctx, &topo)) != STARFOLD_OK) goto out;
    const starfold_collective_desc_t desc = { .kind = STARFOLD_COLL_REDUCE, .op = STARFOLD_OP_SUM,
                                              .num_sources = NDEV, .sources = devices, .num_tensors = LAYERS,
                                              .tensors = layers };
    if ((st = starfold_graph_compile(topo, "auto", &desc, NULL, &graph)) != STARFOLD_OK) goto out;
    if ((st = starfold_persistent_create_views(ctx, graph, views, views, &allreduce)) != STARFOLD_OK) goto out;
    printf("all-reduce of %d layers (%zu floats per bucket, algorithm %s) bound to %d buckets; StarPU tracks %d "
           "vectors, not %d handles\n",
           LAYERS, total, starfold_graph_algorithm(graph), NDEV, NDEV, NDEV * LAYERS);
    starfold_graph_destroy(graph);
    graph = NULL;

    /* Each step: the backward pass, layers in reverse order, one task per layer and device, each on
     * its device's worker; then the all-reduce, in place on the buckets, started right behind them. */
    for (int s = 0; s < STEPS; s++) {
        for (int l = LAYERS - 1; l >= 0; l--)
            for (int d = 0; d < NDEV; d++) {
                args[s][d][l] = (struct layer_arg){ s, l, d, offset[l], layers[l].count };
                struct starpu_task *t = starpu_task_create();
                t->cl = &backward_cl;
                t->cl_arg = &args[s][d][l];
                t->handles[0] = bucket[d];
                t->execute_on_a_specific_worker = 1;
                t->workerid = (unsigned)starfold_context_device_worker(ctx, d);
                if (starpu_task_submit(t) != 0) goto out;
            }
        if ((st = starfold_persistent_start(allreduce, &req[s])) != STARFOLD_OK) goto out;
    }
    printf("%d steps submitted: %d backward tasks and one all-reduce start each\n", STEPS, NDEV * LAYERS);
    for (int s = 0; s < STEPS; s++)
        if ((st = starfold_request_wait(req[s])) != STARFOLD_OK) goto out;

    /* Every element of every bucket: the sum over devices of that layer's gradient. */
    float *host = malloc(total * sizeof(float));
    ok = host != NULL;
    for (int d = 0; d < NDEV && ok; d++) {
        if ((st = starfold_vector_read(bucket[d], host, total * sizeof(float))) != STARFOLD_OK) {
            ok = 0;
            break;
        }
        for (int l = 0; l < LAYERS && ok; l++)
            for (size_t i = 0; i < layers[l].count; i++) {
                float expect = 0.0f;
                for (int e = 0; e < NDEV; e++) expect += grad_value(STEPS - 1, l, e, i);
                if (host[offset[l] + i] != expect) {
                    fprintf(stderr, "device %d layer %d element %zu: %g, expected %g\n", d, l, i,
                            host[offset[l] + i], expect);
                    ok = 0;
                    break;
                }
            }
    }
    free(host);
    printf("buckets on %d devices after step %d: %s\n", NDEV, STEPS - 1, ok ? "every layer summed" : "WRONG");

out:
    if (st != STARFOLD_OK) fprintf(stderr, "gradient_bucket: %s (%s)\n", starfold_status_string(st), starfold_last_error());
    for (int s = 0; s < STEPS; s++) starfold_request_destroy(req[s]);
    starpu_task_wait_for_all();
    starfold_persistent_destroy(allreduce);
    for (int d = 0; d < NDEV; d++) starfold_vector_destroy(ctx, bucket[d]);
    starfold_graph_destroy(graph);
    starfold_topology_destroy(topo);
    starfold_context_destroy(ctx);
    return ok ? 0 : 1;
}
