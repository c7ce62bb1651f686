/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * starfold: inspect topologies, compile and draw reduction graphs, run and benchmark reductions.
 *
 *     starfold [--help | --version]
 *     starfold help [COMMAND]
 *     starfold COMMAND [OPTIONS]        COMMAND: topo, graph, simulate, run, bench, demo
 *
 * Exit statuses: 0 success, 1 failure, 2 bad arguments.
 */
#include "cli.h"

#include <errno.h>
#include <string.h>

static const cli_command_t *const commands[] = { &cli_cmd_topo, &cli_cmd_graph, &cli_cmd_simulate, &cli_cmd_run,
                                                 &cli_cmd_bench, &cli_cmd_demo };
#define NUM_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f, "Usage: starfold COMMAND [OPTIONS]\n"
               "       starfold --help | --version | help COMMAND\n"
               "\n"
               "Cross-device reductions (tf.distribute semantics) compiled into StarPU task graphs.\n"
               "\n"
               "Commands:\n");
    for (size_t i = 0; i < NUM_COMMANDS; i++) fprintf(f, "  %-8s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(f, "\n"
               "Run 'starfold COMMAND --help' for a command's options, 'man starfold' for the whole manual.\n"
               "Exit status: 0 success, 1 failure (an error, wrong results), 2 bad arguments.\n");
}

static const cli_command_t *find_command(const char *name)
{
    for (size_t i = 0; i < NUM_COMMANDS; i++)
        if (strcmp(commands[i]->name, name) == 0) return commands[i];
    return NULL;
}

static int unknown_command(const char *name)
{
    fflush(stdout);
    fprintf(stderr, "starfold: unknown command '%.64s' (commands: topo, graph, simulate, run, bench, demo; see starfold --help)\n",
            name);
    return CLI_USAGE;
}

/*
 * Output that did not reach its file is a failure (GNU's close_stdout): a full disk, /dev/full, a
 * closed descriptor. Every command's result on stdout is checked here, after the command, and the
 * exit status says 1 with the reason on stderr.
 */
static int finish_stdout(int status)
{
    errno = 0;
    int failed = fflush(stdout) != 0, err = errno;
    if (!failed && ferror(stdout)) {
        /* A write failed earlier and its errno is long gone: one probe byte on the lost output asks
         * the system again for the reason (ENOSPC, EBADF, EIO...). */
        failed = 1;
        clearerr(stdout);
        errno = 0;
        err = fputc('\n', stdout) == EOF || fflush(stdout) != 0 ? errno : 0;
    }
    errno = 0;
    if (fclose(stdout) != 0 && !failed) {
        failed = 1;
        err = errno;
    }
    if (!failed) return status;
    fprintf(stderr, "starfold: cannot write the output: %s\n", err ? strerror(err) : "write error");
    return status == CLI_OK ? CLI_FAIL : status;
}

static int run_main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "starfold: missing command (topo, graph, simulate, run, bench, demo; see starfold --help)\n");
        return CLI_USAGE;
    }
    const char *first = argv[1];
    if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0) {
        usage(stdout);
        return CLI_OK;
    }
    if (strcmp(first, "--version") == 0 || strcmp(first, "-V") == 0) {
        printf("starfold %s\n", starfold_version());
        return CLI_OK;
    }
    if (strcmp(first, "help") == 0) {
        if (argc == 2) {
            usage(stdout);
            return CLI_OK;
        }
        const cli_command_t *c = find_command(argv[2]);
        if (!c) return unknown_command(argv[2]);
        fputs(c->usage, stdout);
        return CLI_OK;
    }
    if (first[0] == '-') {
        fprintf(stderr, "starfold: unknown option '%.64s' before the command (see starfold --help)\n", first);
        return CLI_USAGE;
    }
    const cli_command_t *c = find_command(first);
    if (!c) return unknown_command(first);
    return c->main(c, argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
    /* Lines reach a pipe as they are printed (`starfold demo | tee log`), as they do on a terminal. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    return finish_stdout(run_main(argc, argv));
}
