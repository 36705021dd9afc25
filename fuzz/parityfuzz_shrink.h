/*
 * parityfuzz_shrink.h - the `parityfuzz shrink` subcommand (parityfuzz_shrink.c), which
 * parityfuzz.c hands argv to when its first argument is "shrink".
 */
#ifndef PARITY_FUZZ_SHRINK_CLI_H
#define PARITY_FUZZ_SHRINK_CLI_H

/* argv[0] is "shrink"; returns the exit status. */
int parity_shrink_main(int argc, char **argv);

#endif
