/* child.h - the demos' option tests run a parser in a child process (a bad
   value exits, as it must, without ending the test). POSIX. */
#ifndef TESTS_CHILD_H
#define TESTS_CHILD_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* Defines `static int name(char **argv, int argc, const char *out)`: runs
   parse(&opts, argc, argv) in a child, its stdout to `out` (NULL: dropped)
   and its stderr dropped; the child's exit status, or -1 if it did not
   exit. */
#define CHILD_PARSER(name, opts_type, parse)                                   \
  static int name(char **argv, int argc, const char *out) {                    \
    int status;                                                                \
    pid_t pid;                                                                 \
    fflush(stdout);                                                            \
    pid = fork();                                                              \
    if (pid == 0) {                                                            \
      opts_type o;                                                             \
      if (!freopen("/dev/null", "w", stderr) ||                                \
          !freopen(out ? out : "/dev/null", "w", stdout))                      \
        _exit(99);                                                             \
      parse(&o, argc, argv);                                                   \
      exit(0);                                                                 \
    }                                                                          \
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))      \
      return -1;                                                               \
    return WEXITSTATUS(status);                                                \
  }

#endif /* TESTS_CHILD_H */
