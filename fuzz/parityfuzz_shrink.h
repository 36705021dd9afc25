/*
 * parityfuzz_shrink.h - the subcommands parityfuzz.c hands argv to by their first argument:
 * `shrink` (parityfuzz_shrink.c) and `triage` (parityfuzz_triage.c).
 */
#ifndef PARITY_FUZZ_SHRINK_CLI_H
#define PARITY_FUZZ_SHRINK_CLI_H

/* argv[0] is "shrink"; returns the exit status. */
int parity_shrink_main(int argc, char **argv);
/* argv[0] is "triage"; returns the exit status. */
int parity_triage_main(int argc, char **argv);
/* `parityfuzz graph ...` (parityfuzz_graph.c). */
int parity_graph_main(int argc, char **argv);

#endif
