/* lct.h: the parts of upstream LCI 2's tool library (LCT) that its
 * examples and benchmarks use, so they build against this package: an
 * argument parser, a thread barrier and a PMI wrapper. Implemented in
 * liblci (docs/ARCHITECTURE.md, "Compatibility with upstream LCI 2").
 * C and C++. */
#ifndef LCT_H
#define LCT_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Library setup: nothing needs it here; kept for upstream's programs.
 * LCT_fina also ends the PMI wrapper if the program left it initialized. */
void LCT_init(void);
void LCT_fina(void);

/* A string -> int table (the values an argument may name). */
typedef struct {
  const char* key;
  int val;
} LCT_dict_str_int_t;

/* Argument parser: long options --name VALUE or --name=VALUE.
 * has_arg is getopt's no_argument (the option sets *ptr to 1),
 * required_argument or optional_argument (*ptr = the value: a key of the
 * dictionary, else an integer). An option not added is reported on stderr
 * and skipped; a value that is neither a key nor an integer ends the
 * program with a message naming the option. */
typedef void* LCT_args_parser_t;
LCT_args_parser_t LCT_args_parser_alloc(void);
void LCT_args_parser_free(LCT_args_parser_t parser);
void LCT_args_parser_add(LCT_args_parser_t parser, const char* name,
                         int has_arg, int* ptr);
void LCT_args_parser_add_dict(LCT_args_parser_t parser, const char* name,
                              int has_arg, int* ptr, LCT_dict_str_int_t dict[],
                              int count);
void LCT_args_parser_parse(LCT_args_parser_t parser, int argc, char* argv[]);
/* Prints every option and its value on stdout: one line each when verbose,
 * else one line of JSON-like text. */
void LCT_args_parser_print(LCT_args_parser_t parser, bool verbose);

/* Thread barrier of nthreads threads, reusable. arrive returns a ticket;
 * test(ticket) is true once all nthreads arrived for that ticket's round;
 * wait spins (yielding) until then. */
typedef void* LCT_tbarrier_t;
LCT_tbarrier_t LCT_tbarrier_alloc(int nthreads);
void LCT_tbarrier_free(LCT_tbarrier_t* tbarrier_p);
int64_t LCT_tbarrier_arrive(LCT_tbarrier_t tbarrier);
bool LCT_tbarrier_test(LCT_tbarrier_t tbarrier, int64_t ticket);
void LCT_tbarrier_wait(LCT_tbarrier_t tbarrier, int64_t ticket);
void LCT_tbarrier_arrive_and_wait(LCT_tbarrier_t tbarrier);

/* PMI wrapper over LCI's bootstrap (the process-wide backend that
 * runtimes use too: docs/LAUNCHING.md). Keys and values are strings of at
 * most LCT_PMI_STRING_LIMIT bytes with the terminating null. publish stores
 * a pair; after the next barrier (collective) getname(rank, key, value)
 * copies what `rank` published under `key` into value (an empty string if
 * nothing). A failure (no launcher reachable, a bad key) ends the program
 * with a message. finalize drops this wrapper's use of the bootstrap, which
 * stays for runtimes. */
#define LCT_PMI_STRING_LIMIT 255
void LCT_pmi_initialize(void);
int LCT_pmi_initialized(void);
int LCT_pmi_get_rank(void);
int LCT_pmi_get_size(void);
void LCT_pmi_publish(char* key, char* value);
void LCT_pmi_getname(int rank, char* key, char* value);
void LCT_pmi_barrier(void);
void LCT_pmi_finalize(void);

#ifdef __cplusplus
}
#endif

#endif /* LCT_H */
