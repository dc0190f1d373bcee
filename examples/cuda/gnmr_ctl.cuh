/* gnmr_ctl.cuh - gnmr.h's controller on a CUDA device, one unit per thread,
   both rule sets (PAPER, the default, and NOISE).

   Copy this file next to gnmr.h (and gnmr_norms.cuh for the norms). Like
   gnmr.h it is a single-file library: in exactly one .cu file write
       #define GNMR_IMPLEMENTATION        // gnmr.h's (GNMR_STATIC is fine)
       #include "gnmr.h"
       #define GNMR_CUDA_IMPLEMENTATION   // this file's kernels
       #include "gnmr_ctl.cuh"
   and every other .cu file just includes gnmr.h and gnmr_ctl.cuh: it sees
   the types and the host functions below and gnmr_cuda_recovering, and
   needs neither the implementation nor -rdc. Build with nvcc --fmad=false
   -Xcompiler -ffp-contract=off (sm_80 or newer) and without
   --use_fast_math, so the device rounds as the CPU does: decisions, state
   and the step report are then bit-identical to gnmr_step's (under
   --use_fast_math or --ftz=true the build stops, see below; nvcc lets no
   header see --fmad, so a build without --fmad=false compiles and may
   give other bits).

   Use:
       gnmr_ctl host;  gnmr_init(&host, &cfg, slots, N);  // as on the CPU
       gnmr_cuda_ctl gc;
       gnmr_cuda_ctl_create(&gc, &host);       // device copy of config+state
       each step, on a stream (no host sync; capturable in a CUDA graph):
         gnmr_cuda_step(&gc, d_norms, d_decisions, stream);
         // d_decisions[u] (device, N gnmr_decision): unit u's decision
         // this step (its gradient's scale, flags, action), as gnmr_step's
         gnmr_cuda_scale_grads(&gc, d_grads, n_grads, max_elems,
                               d_decisions, stream);
         gnmr_cuda_report_async(&gc, pinned_report, stream);  // if wanted
         in any kernel: gnmr_cuda_recovering(gc.lock, u)
         // 1: unit u, the whole unit (every GEMM of it), high-fidelity
         // next step; 0: low. Whole-unit yes/no, gnmr_recovering's answer.
         on the host: gnmr_cuda_paths_publish / _wait (below) // the same
       gnmr_cuda_status(&gc, &last, &first);   // syncs: did the steps pass?
       gnmr_cuda_ctl_download(&gc, &host);     // back, e.g. to checkpoint
       gnmr_cuda_ctl_upload(&gc, &host);       // there, e.g. after a load
       gnmr_cuda_ctl_destroy(&gc);
   The controller's answers (gnmr_cuda_recovering, the path bits) are
   whole-unit; the placer's (gnmr_cuda_place_step's high, below) are per
   GEMM, GNMR_GEMM_* bits. A trainer running both runs GEMM g of unit u
   high-fidelity when the controller's answer is 1 or the placer's bits
   hold g.
   While the device holds the state, leave the host controller alone: a
   download overwrites it. New settings: gnmr_reconfigure on the host after
   a download, then an upload (a graph captured before stays valid: it
   launches the same kernels in either rule set).

   Errors, one convention with gnmr_norms.cuh: every host function returns
   GNMR_OK, a gnmr.h code (GNMR_EINVAL: a NULL or bad argument; GNMR_ESTATE:
   the host controller is not usable; GNMR_EMISMATCH: another number of
   units) or GNMR_CUDA_ECUDA, a CUDA call failed: the cudaError_t is then in
   gc->cuda_error (cudaGetErrorString names it). Nothing calls exit(). A
   step's own result (GNMR_OK, or GNMR_ENORM for a finite negative norm,
   GNMR_ESTATE for a controller edited or left behind: the step then
   changes nothing, as gnmr_step) stays on the device until
   gnmr_cuda_status reads it.

   One step is four kernels, up to GNMR_CUDA_GRID_SELECT_MIN units (up to
   GNMR_CUDA_FUSED_MAX units the same phases in one block, one launch);
   above it the admission's select runs over the grid (admit below):
     scan     every thread one unit, blocks of 256: a finite negative norm
              refuses the step; thread 0 of each block checks the controller
              (gnmr_step's ESTATE) while thread 32 reads the step's rules.
              NOISE mode, rule N3's pass: dev = L(g) -
              mu of every finite unit, the settled units' bins of the grid
              counted in a shared histogram, merged into the global one with
              integer atomics (any order gives the same counts); the
              block's eight lanes of G's sum of squares (unit u in lane u %
              8, in order) folded ((0+1)+(2+3))+((4+5)+(6+7)): the block of
              256 units of gnmr.h's fixed order is the CUDA block.
     verdict  one block: the counts into shared memory, the lower median's
              bin by 64 threads (the block of 64 bins that holds it, then
              the bin: gnmr_step's answer), the blocks' sums added in order
              by one thread (gnmr.h's order: left to right), then gnmr.h's
              own gnmr__step_verdict (G's history, GLOBAL, the global
              scale, the report); the step's rules, with the verdict's c,
              GLOBAL and scale, left for the units.
     units    every thread one unit (each block copies the verdict's rules,
              a byte a thread): gnmr.h's gnmr__unit_step (rules 0-6, 8,
              9 and 10's band; N1, N2, N4-N9), the totals summed per block
   (integers, a ballot per warp), each candidate for a slot listed in any order
   (rule N8: on a GLOBAL step only NONFINITE ones). Above
              GNMR_CUDA_GRID_SELECT_MIN units each block also counts its
              candidates' first digit (below) and the last block to finish
              starts the grid's select and fixes that digit.
     admit    rule 7 as a selection. The free slots are max_recovering
              minus the units still locked; if the candidates fit, all are
              admitted; else the k best by (score descending, index
              ascending) are found by a radix select on the 96-bit key
              (score bits, ~index), unique per unit, 8 bits a digit, so the
              admitted set is exactly gnmr_step's whatever order the list
              is in. A digit: every candidate that matches the prefix
              counted by its digit, the counts summed in 16 chunks, the
              digit found and fixed by the one thread whose digit holds the
              need-th best key (two barriers). Then the controller's totals
              and its report (gnmr_step_info's).
              Up to GNMR_CUDA_GRID_SELECT_MIN units: one block of 1,024
              threads, one launch.
              Above: the first digit in the units kernel, then
              GNMR_CUDA_GRID_PASSES launches of one digit each over
              the grid (blocks of 1,024: each block counts its slice of the
              list into a shared histogram and adds it into a global one
              with integer atomics; the launch's last block to finish, by
              a fence and an arrival count, fixes the digit from those
              counts and clears them; the last launch's last block finishes
              any digits left in its block; a launch whose select is done
              returns at once), then rule 7 over the grid (blocks of 256),
              block 0's thread 0 ending the step. No host sync and no
              cooperative launch: capturable in a graph.
   Still on one thread: the usability check (gnmr.h's seal), the rules
   (gnmr.h's gnmr__rules_of), G's history and verdict (gnmr.h's
   gnmr__step_verdict), G's sum (a fixed left-to-right order), the totals
   and the commit (gnmr.h's gnmr__step_totals, gnmr__commit: the seal
   again). They are gnmr.h's own serial functions, left as they are.
   The bodies of the kernels are the GNMR_HOSTDEV functions of the
   implementation, functions of (thread, shared state): the test
   tests/test_ctl_parallel.c runs them on the CPU thread by thread and phase
   by phase against gnmr_step. That part is plain C99 (a C compiler sees
   only it; build it with fast-math off, as the test does: its few
   additions must keep their order); the CUDA part is under __CUDACC__. */
#ifndef GNMR_CTL_CUH
#define GNMR_CTL_CUH

#include "gnmr.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* GNMR_CUDA_ECUDA (gnmr.h): a CUDA call failed; the object's cuda_error
   says which (also gnmr_norms.cuh's GNMR_NORMS_ECUDA). */
/* Threads of the admit kernel (one block), and of each block of the grid
   select's passes. */
#define GNMR_CUDA_ADMIT_THREADS 1024
/* Threads per block of the scan and units kernels: one block is one block of
   256 units of G's sum (rule N3), so this is fixed. */
#define GNMR_CUDA_UNIT_THREADS 256
/* Up to this many units a step is one launch of one block (untuned: no
   GPU measured it yet). At most 2048 (the fused kernel's shared lanes). */
#define GNMR_CUDA_FUSED_MAX 2048
/* Above this many units the admission's select runs over the grid (its
   first digit in the units kernel, one launch per further digit,
   GNMR_CUDA_GRID_PASSES of them, then rule 7 over the grid); up to it, in
   one block of GNMR_CUDA_ADMIT_THREADS (one launch).
   Untuned (no GPU has run the grid's select yet): at 8,192 candidates a
   one-block pass reads at most 8 per thread, a few rounds of dependent
   loads, less than the launch a grid pass adds (about 0.8 us in a graph:
   the launch floor of bench/RESULTS.md's H100 run); above it the grid's
   pass reads one candidate per thread whatever the count. */
#ifndef GNMR_CUDA_GRID_SELECT_MIN
#define GNMR_CUDA_GRID_SELECT_MIN 8192
#endif
/* Digit launches over the grid after the units kernel, which counts and
   fixes the first digit itself (1 to 11; untuned): scores of spiky units
   share their first byte (sign and exponent), the second and third
   usually split them; the last launch's last block finishes any digits
   left (ties: the index's bytes) in one block. */
#ifndef GNMR_CUDA_GRID_PASSES
#define GNMR_CUDA_GRID_PASSES 2
#endif
#if GNMR_CUDA_GRID_PASSES < 1 || GNMR_CUDA_GRID_PASSES > 11
#error "gnmr_ctl.cuh: GNMR_CUDA_GRID_PASSES is 1 to 11"
#endif
/* Rule N3's grid. */
#define GNMR_CUDA_BINS 4096

/* ---- the host-side path switch ------------------------------------------
   A trainer that picks each unit's GEMMs on the host (cuBLASLt: FP8 or
   BF16) needs the decisions there, but they live on the device. A decision
   of step t takes effect from step t + 1, so gnmr_cuda_paths_publish packs
   the next-step path bits right after gnmr_cuda_step of step t (bit u % 32
   of word u / 32: unit u, every GEMM of it, runs high fidelity; one bit a
   unit, the controller's whole-unit answer), copies them into pinned host
   memory with cudaMemcpyAsync and records an event on the stream; at the
   start of step t + 1, gnmr_cuda_paths_wait waits on that event alone (no
   stream or device sync: the device goes on with the rest of step t, which
   the host has already queued) and hands back the bits:

       gnmr_cuda_paths paths;
       gnmr_cuda_paths_create(&paths, &host);   // host's state: step 0's bits
       each step:
         const uint32_t *bits;
         gnmr_cuda_paths_wait(&paths, &bits);   // the last step's decisions
         ... unit u's GEMMs: gnmr_cuda_path_high(bits, u) ? BF16 : FP8 ...
         ... backward, norms, gnmr_cuda_step(&gc, ...) ...
         gnmr_cuda_paths_publish(&paths, &gc, stream);   // launches, copies
         ... the optimiser ...
       gnmr_cuda_paths_destroy(&paths);

   Two pinned buffers take turns (gnmr_cuda_path_turns), so a publish
   never writes the buffer the last wait handed out: the bits a wait
   returns stay valid until the second publish after it (one wait per
   publish, as above). publish alternates the buffers on the host, so it
   stays outside a captured graph: launch the step's graph, then publish.
   The packing and the turns are plain C: tests/test_ctl_parallel.c runs
   them on the CPU against gnmr_recovering. */

/* 32-bit words of the path bits of n units. */
#define GNMR_CUDA_PATH_WORDS(n) ((n) / 32u + ((n) % 32u != 0u ? 1u : 0u))

/* 1 if unit u (the whole unit) runs high fidelity (bits: what
   gnmr_cuda_paths_wait gave; the controller's answer, not the placer's). */
static inline GNMR_HOSTDEV int gnmr_cuda_path_high(const uint32_t *bits,
                                                   uint32_t u) {
  return (int)(bits[u / 32] >> (u % 32) & 1u);
}

/* Word w of the path bits of n units from their locks (gnmr_cuda_ctl's
   lock; unit u is high fidelity while lock[u] > 0, gnmr_recovering's
   answer). The pack kernel's thread w. */
static inline GNMR_HOSTDEV uint32_t gnmr_cuda_path_word(const uint32_t *lock,
                                                        uint32_t n,
                                                        uint32_t w) {
  uint32_t word = 0, b;
  for (b = 0; b < 32 && 32 * w + b < n; b++)
    word |= (uint32_t)(lock[32 * w + b] > 0) << b;
  return word;
}

/* Whose turn: publish k (from 0) writes buffer k % 2; a wait after
   `published` publishes reads the buffer of the last one (before any, the
   bits create wrote into both). */
typedef struct gnmr_cuda_path_turns {
  uint32_t *host[2]; /* pinned host memory on a GPU, words each */
  uint64_t published;
} gnmr_cuda_path_turns;

static inline uint32_t *
gnmr_cuda_path_target(const gnmr_cuda_path_turns *turns) {
  return turns->host[turns->published % 2];
}
static inline const uint32_t *
gnmr_cuda_path_latest(const gnmr_cuda_path_turns *turns) {
  return turns->host[(turns->published + 1) % 2];
}

/* IEEE single precision or nothing (gnmr.h, gnmr__cuda_ieee_guard): the
   scan kernel starts with the guard, which fails the whole build (every
   kernel is in the same translation unit); a compiler that says it builds
   with fast math stops here. */
#if defined(__USE_FAST_MATH__)
#error "gnmr: IEEE floats needed: build without --use_fast_math"
#endif

#if defined(__CUDACC__)
#include <cuda_runtime.h>

struct gnmr_cuda_work; /* the step's scratch (the implementation's) */

/* The controller in device memory. Fields are set by create and read by
   the functions below; the device pointers may be handed to kernels. */
typedef struct gnmr_cuda_ctl {
  gnmr_ctl *ctl;                  /* device: its units pointer is device */
  gnmr_slot *slots;               /* device: the state */
  struct gnmr_cuda_work *work;    /* device: the step's scratch, status */
  double *block_sumsq;            /* device: one per 256 units (NOISE) */
  const uint32_t *lock;           /* device: steps of recovery left, per
                                     unit (gnmr_cuda_recovering) */
  const gnmr_step_report *report; /* device: the last step's report */
  uint32_t n_units;
  cudaError_t cuda_error; /* the failure behind GNMR_CUDA_ECUDA */
} gnmr_cuda_ctl;

/* One tensor whose gradient gnmr_cuda_scale_grads multiplies by its unit's
   decision.scale, writing 0 where the scale is 0 (a NaN or Inf gradient
   included) (device array of these). */
typedef struct gnmr_cuda_grad {
  void *data; /* device, n elements of dtype */
  uint64_t n;
  uint32_t dtype; /* GNMR_DTYPE_F32, _F16, _BF16 */
  uint32_t unit;
} gnmr_cuda_grad;

/* Is unit u (the whole unit) on the high-fidelity path next step? For any
   kernel after the step, in any file: lock is gc.lock (gnmr_recovering's
   answer, without its checks). */
static __device__ __forceinline__ int gnmr_cuda_recovering(const uint32_t *lock,
                                                           uint32_t u) {
  return lock[u] > 0;
}

/* Device copy of an initialised host controller (either rule set): config,
   state, totals. Allocates and copies (syncs). On failure gc holds
   nothing. */
int gnmr_cuda_ctl_create(gnmr_cuda_ctl *gc, const gnmr_ctl *host);
/* The host controller's config, state and totals into an existing device
   controller over as many units (e.g. after gnmr_checkpoint_load). Syncs. */
int gnmr_cuda_ctl_upload(gnmr_cuda_ctl *gc, const gnmr_ctl *host);
/* The device state back into host (initialised over as many units): its
   config, totals, G's history, report and slots; host keeps its own slots
   pointer. Syncs. */
int gnmr_cuda_ctl_download(gnmr_cuda_ctl *gc, gnmr_ctl *host);
void gnmr_cuda_ctl_destroy(gnmr_cuda_ctl *gc);
/* One step: norms (device, n_units floats) to decisions (device, or NULL).
   Launches only (no sync): capturable in a CUDA graph. Like every launching
   call here, it takes its launch errors from cudaGetLastError, which also
   returns (and clears) an error the caller's own earlier launch left:
   check your launches before calling it. */
int gnmr_cuda_step(gnmr_cuda_ctl *gc, const float *norms, gnmr_decision *out,
                   cudaStream_t stream);
/* Multiplies each tensor's gradient by its unit's decisions[unit].scale,
   in double, rounded once to the tensor's type (units at scale 1 return at
   once); after a refused step (gnmr_cuda_status says which), whose
   decisions were not written, it leaves every gradient as it is.
   max_elems: the largest tensor's n. n_grads <= 65535. */
int gnmr_cuda_scale_grads(gnmr_cuda_ctl *gc, const gnmr_cuda_grad *grads,
                          uint32_t n_grads, uint64_t max_elems,
                          const gnmr_decision *decisions, cudaStream_t stream);
/* Copies the last step's report (gnmr_step_info's: G, its deviation, c,
   the settled, flagged, rises, falls, GLOBAL, the global scale) to dst,
   asynchronously on stream (capturable): dst is device memory or pinned
   host memory, read it after the stream gets there. */
int gnmr_cuda_report_async(gnmr_cuda_ctl *gc, gnmr_step_report *dst,
                           cudaStream_t stream);
/* The last step's result and the first refused step's (GNMR_OK if none);
   syncs with the device. Either pointer may be NULL. */
int gnmr_cuda_status(gnmr_cuda_ctl *gc, int *last, int *first_error);

/* The host-side path switch (above). */
typedef struct gnmr_cuda_paths {
  gnmr_cuda_path_turns turns; /* the two pinned buffers */
  uint32_t *device;           /* device: the packed bits */
  cudaEvent_t ready[2];       /* recorded after the copy into host[i] */
  uint32_t n_units, words;
  cudaError_t cuda_error; /* the failure behind GNMR_CUDA_ECUDA */
} gnmr_cuda_paths;

/* Pinned buffers, events and the device words for host's units, both
   buffers filled with host's own bits (what step 0 reads: nothing is
   recovering after gnmr_init; after a checkpoint load, what it holds).
   Allocates (syncs). On failure p holds nothing. */
int gnmr_cuda_paths_create(gnmr_cuda_paths *p, const gnmr_ctl *host);
/* After gnmr_cuda_step on stream: packs gc's next-step bits, copies them
   into the next buffer and records its event. Launches and copies only;
   not inside a captured graph. GNMR_EMISMATCH: gc has another number of
   units. */
int gnmr_cuda_paths_publish(gnmr_cuda_paths *p, const gnmr_cuda_ctl *gc,
                            cudaStream_t stream);
/* Waits for the last publish's event (cudaEventSynchronize: that copy
   only) and sets *bits to its buffer: gnmr_cuda_path_high(*bits, u). */
int gnmr_cuda_paths_wait(gnmr_cuda_paths *p, const uint32_t **bits);
void gnmr_cuda_paths_destroy(gnmr_cuda_paths *p);

/* ---- the placer (gnmr.h, rules P1-P7) on the device ---------------------
   One thread runs gnmr.h's gnmr_place_step itself over a device copy of
   the placer, so the decisions and state are the host's bit for bit (the
   build flags above). One launch per step, O(units) in one thread: for
   the few hundred units of a model's GEMMs, not for millions.

       gnmr_place host;  gnmr_place_init(&host, &cfg, units, costs, N);
       gnmr_cuda_place gp;
       gnmr_cuda_place_create(&gp, &host);
       each step, after the optimizer's update:
         gnmr_cuda_place_step(&gp, d_update, d_qerr, d_high, stream);
         // d_high[u] (device, N bytes): GNMR_GEMM_* bits, the GEMMs of
         // unit u that run high-fidelity next step (gnmr_place_high's
         // answer); 0: none. Not a yes/no: test each GEMM's bit,
         // d_high[u] & GNMR_GEMM_FWD (forward), _DGRAD, _WGRAD. A nonzero
         // entry is cfg.gemms, less GNMR_GEMM_FWD under serve =
         // GNMR_SERVE_LOW: there the forward bit never appears (the
         // placer leaves every forward on the low format).
       gnmr_cuda_place_status(&gp, &last, &first);  // syncs
       gnmr_cuda_place_download(&gp, &host);   // back, e.g. to checkpoint
       gnmr_cuda_place_destroy(&gp);
   Codes as the controller's: GNMR_EINVAL, GNMR_ESTATE, GNMR_EMISMATCH,
   GNMR_CUDA_ECUDA (gp->cuda_error); a step's own code (GNMR_ENORM for a
   finite negative signal: the step changes nothing) stays on the device
   until gnmr_cuda_place_status reads it. The step is gnmr_place_step
   itself, rule P7 included: told the plan T, the calls past it hand back
   the last planned step's bits and change no unit's GEMMs. Checked:
   tests/test_ctl_parallel.c runs the kernel's body on the CPU (the
   default config; serve LOW with the backward GEMMs and with all three;
   the forward alone under serve HIGH; told a plan and run past it);
   tests/cuda/test_ctl_cuda.cu on a GPU, the default config alone (every
   GEMM, serve HIGH, no plan). The other configs have not run on a GPU. */
typedef struct gnmr_cuda_place {
  gnmr_place *pl;         /* device: its units pointer is device */
  gnmr_place_unit *units; /* device: the state */
  int32_t *status;        /* device: the last step's code, the first error */
  uint32_t n_units;
  cudaError_t cuda_error; /* the failure behind GNMR_CUDA_ECUDA */
} gnmr_cuda_place;

/* Device copy of an initialised host placer. Allocates and copies
   (syncs). On failure gp holds nothing. */
int gnmr_cuda_place_create(gnmr_cuda_place *gp, const gnmr_place *host);
/* One step: update and qerr (device, n_units doubles each) to high
   (device, n_units bytes, or NULL): per unit the GNMR_GEMM_* bits of the
   GEMMs it runs high-fidelity next step, 0 for none (gnmr_place_step's
   high; never GNMR_GEMM_FWD under GNMR_SERVE_LOW). Launches only (no
   sync). */
int gnmr_cuda_place_step(gnmr_cuda_place *gp, const double *update,
                         const double *qerr, uint8_t *high,
                         cudaStream_t stream);
/* The last step's code and the first refused step's (GNMR_OK if none);
   syncs. Either pointer may be NULL. */
int gnmr_cuda_place_status(gnmr_cuda_place *gp, int *last, int *first_error);
/* The device state back into host (initialised over as many units); host
   keeps its own units pointer. Syncs. */
int gnmr_cuda_place_download(gnmr_cuda_place *gp, gnmr_place *host);
void gnmr_cuda_place_destroy(gnmr_cuda_place *gp);
#endif /* __CUDACC__ */
#endif /* GNMR_CTL_CUH */

/* ======================================================================== */
#if defined(GNMR_CUDA_IMPLEMENTATION) && !defined(GNMR_CTL_CUH_IMPLEMENTED)
#define GNMR_CTL_CUH_IMPLEMENTED

#ifndef GNMR__IMPLEMENTED
#error "gnmr_ctl.cuh: GNMR_CUDA_IMPLEMENTATION needs gnmr.h's implementation \
in the same file (#define GNMR_IMPLEMENTATION before including gnmr.h)"
#endif

/* The admit kernel's shared state: the radix select of the k best keys.
   Keys: hi = the score's bits (positive doubles order as their bits), lo =
   ~index (a lower index is the larger key). The `depth` top bits of the
   key are fixed to (hi, lo) so far, `left` candidates match them and the
   best `need` of those are still to be taken; every key above the prefix is
   taken. */
typedef struct gnmr_cuda_select {
  uint32_t hist[256];
  uint32_t chunk[16];   /* counts of digits 16 c ... 16 c + 15 */
  uint32_t digit, over; /* the digit found, the count of those over it */
  uint64_t hi;
  uint32_t lo, depth, need, left;
  uint32_t k;          /* admitted: min(candidates, free slots) */
  uint32_t candidates; /* listed in the units' heap scratch */
  int32_t status;
} gnmr_cuda_select;

/* The step's scratch and result, in device memory. Between steps every
   count and bin is 0. */
typedef struct gnmr_cuda_work {
  gnmr__tally t;                 /* units: this step's sums */
  uint32_t negative, unusable;   /* scan: the step is refused */
  uint32_t finite, settled, up;  /* scan: rule N3's counts */
  int32_t global;                /* verdict: a GLOBAL step */
  double common, global_scale;   /* verdict, for the units */
  gnmr_step_report report;       /* verdict: the report but its counts */
  gnmr__rules rules;             /* verdict: the step's rules, with its c,
                                    GLOBAL and scale (for the units) */
  int32_t status;                /* the last step: GNMR_OK or GNMR_E* */
  int32_t first_error;           /* the first refused step's code since
                                    create or upload */
  uint32_t hist[GNMR_CUDA_BINS]; /* scan: the settled units per bin */
  gnmr_cuda_select sel;          /* the grid's select (above
                                    GNMR_CUDA_GRID_SELECT_MIN units): its
                                    histogram the passes' global one */
  uint32_t arrived;              /* blocks of a grid launch done counting */
} gnmr_cuda_work;

/* scan's codes for a unit that is not counted in the histogram */
#define GNMR_CUDA__UNSETTLED GNMR_CUDA_BINS /* observed, k < max(warmup, 1) */
#define GNMR_CUDA__NOT_FINITE                                                  \
  (GNMR_CUDA_BINS + 1) /* NaN, Inf, 0 or past                                  \
                          the last */

/* ---- the arithmetic of every kernel, host and device ------------------- */

/* scan, unit u: a finite negative norm refuses the step (as gnmr_step's
   check). */
static inline GNMR_HOSTDEV void gnmr_cuda__check(const float *norms, uint32_t n,
                                                 uint32_t u,
                                                 gnmr_cuda_work *w) {
  uint32_t bits;
  if (u >= n) return;
  memcpy(&bits, &norms[u], 4);
  if (bits - 0x80000001u < 0x7F7FFFFFu) w->negative = 1;
}

/* scan, unit u of a usable NOISE-mode controller (rule N3, as gnmr.h's
   phase 2): dev[u] = L(g) - mu for an observed g (finite, not 0: gnmr.h's
   rule 0); returns the grid's bin of a
   settled unit, GNMR_CUDA__UNSETTLED or GNMR_CUDA__NOT_FINITE; *up: a
   settled unit's dev above L(global_ratio). */
static inline GNMR_HOSTDEV uint32_t gnmr_cuda__scan(const gnmr__rules *r,
                                                    const gnmr__soa *s,
                                                    const float *norms,
                                                    uint32_t u, int *up) {
  double dr;
  *up = 0;
  if (u >= r->n || !gnmr__observed32(norms[u])) return GNMR_CUDA__NOT_FINITE;
  dr = gnmr__log((double)norms[u], r->log_floor) - s->log_mean[u];
  s->dev[u] = dr;
  if (s->finite_steps[u] < r->settle) return GNMR_CUDA__UNSETTLED;
  *up = dr > r->l_global;
  return gnmr__grid(dr);
}

/* Lane j (0-7) of G's sum of squares in block b of 256 units: the observed
   g^2 of units 256 b + j, + 8, ... in order, from +0 (gnmr.h's order). */
static inline GNMR_HOSTDEV double
gnmr_cuda__lane(const float *norms, uint32_t n, uint32_t b, uint32_t j) {
  const uint32_t end = n - 256 * b < 256 ? n : 256 * b + 256;
  double lane = 0.0;
  uint32_t u;
  for (u = 256 * b + j; u < end; u += 8)
    if (gnmr__observed32(norms[u])) {
      const double g = (double)norms[u];
      lane += gnmr__mul(g, g); /* exact: g is a float */
    }
  return lane;
}

/* verdict, thread i < 64: the counts of bins 64 i ... 64 i + 63. */
static inline GNMR_HOSTDEV uint32_t gnmr_cuda__bin_sum(const uint32_t *hist,
                                                       uint32_t i) {
  uint32_t b, sum = 0;
  for (b = 0; b < 64; b++) sum += hist[64 * i + b];
  return sum;
}

/* The verdict's search for the lower median's bin (the answer of
   gnmr.h's walk, for any counts) by 64 threads in two phases, each thread
   at most 63 additions instead of one thread walking up to 127 bins:
   first the block of 64 bins that holds rank = (settled - 1) / 2 (the
   last, if none before), then the bin in it (the last bin, if none
   before). In each phase exactly one thread's test holds: the counts
   below a block (a bin) only grow. */
typedef struct gnmr_cuda_median {
  uint32_t block, below; /* phase 1: the block, the counts below it */
  uint32_t bin;          /* phase 2: the median's bin */
} gnmr_cuda_median;

/* phase 1, thread i < 64 (bin_sums: gnmr_cuda__bin_sum's). */
static inline GNMR_HOSTDEV void
gnmr_cuda__median_block(gnmr_cuda_median *m, const uint32_t *bin_sums,
                        uint32_t settled, uint32_t i) {
  const uint32_t rank = (settled - 1) / 2;
  uint32_t j, below = 0;
  for (j = 0; j < i; j++) below += bin_sums[j];
  if (below <= rank && (i == 63 || below + bin_sums[i] > rank)) {
    m->block = i;
    m->below = below;
  }
}

/* phase 2, thread j < 64 (after phase 1). */
static inline GNMR_HOSTDEV void gnmr_cuda__median_bin(gnmr_cuda_median *m,
                                                      const uint32_t *hist,
                                                      uint32_t settled,
                                                      uint32_t j) {
  const uint32_t rank = (settled - 1) / 2, at = 64 * m->block + j;
  uint32_t b, below = m->below;
  for (b = 64 * m->block; b < at; b++) below += hist[b];
  if (below <= rank && (at == 4095 || below + hist[at] > rank)) m->bin = at;
}

/* G's sum of squares, gnmr.h's order: sum + x[0] + x[1] + ... + x[m - 1],
   left to right (the scan's block sums, m at a time). */
static inline GNMR_HOSTDEV double
gnmr_cuda__add_blocks(double sum, const double *x, uint32_t m) {
  uint32_t i;
  for (i = 0; i < m; i++) sum += x[i];
  return sum;
}

/* verdict, thread 0, after the scan and the median's search: rule N3's c,
   G's history and the verdict (gnmr.h's own gnmr__step_verdict), kept in
   w for the units and the admit; on a refused step or in PAPER mode,
   nothing but an empty report. bin: the median's (read only if the step
   has common_min_units settled units); sumsq: G's sum of squares, the
   scan's block sums added in order (gnmr_cuda__add_blocks); rules: the
   step's (gnmr__rules_of's, at its start or after the scan: the scan
   changes nothing they read). */
static inline GNMR_HOSTDEV void gnmr_cuda__verdict(gnmr_ctl *ctl,
                                                   gnmr_cuda_work *w,
                                                   const gnmr__rules *rules,
                                                   uint32_t bin, double sumsq) {
  gnmr__rules r;
  gnmr_step_report rep;
  memset(&rep, 0, sizeof rep);
  rep.global_scale = 1.0;
  w->common = 0.0;
  w->global = 0;
  w->global_scale = 1.0;
  if (!w->negative && !w->unusable && ctl->cfg.rule == GNMR_RULE_NOISE) {
    r = *rules;
    if (w->settled >= ctl->cfg.common_min_units)
      r.common = gnmr__grid_centre(bin);
    gnmr__step_verdict(ctl, &r, &rep, sumsq, w->finite, w->settled, w->up);
    w->common = r.common;
    w->global = r.global;
    w->global_scale = r.global_scale;
  }
  w->report = rep;
}

/* The verdict's c, GLOBAL and global scale into the step's rules r. */
static inline GNMR_HOSTDEV void
gnmr_cuda__rules_verdict(const gnmr_cuda_work *w, gnmr__rules *r) {
  r->common = w->common;
  r->global = w->global;
  r->global_scale = w->global_scale;
}

/* The verdict kernel's thread 0: the step's rules read once, the verdict,
   and the rules with its c, GLOBAL and global scale into w->rules, which
   the units kernel's blocks copy instead of each reading them again (the
   one-block kernel keeps its rules from the step's start: the same values,
   nothing the scan and the verdict do changes what they read). */
static inline GNMR_HOSTDEV void gnmr_cuda__verdict_rules(gnmr_ctl *ctl,
                                                         gnmr_cuda_work *w,
                                                         uint32_t bin,
                                                         double sumsq) {
  gnmr__rules r;
  gnmr__rules_of(ctl, &r);
  gnmr_cuda__verdict(ctl, w, &r, bin, sumsq);
  gnmr_cuda__rules_verdict(w, &r);
  w->rules = r;
}

/* units, thread u: the unit's rules; returns gnmr.h's GNMR__EV_* bits (0
   for a thread past the last unit or a refused step). */
static inline GNMR_HOSTDEV unsigned
gnmr_cuda__unit(const gnmr_ctl *ctl, const gnmr__rules *r, const float *norms,
                gnmr_decision *out, const gnmr_cuda_work *w, uint32_t u) {
  gnmr__soa s;
  if (u >= r->n || w->negative || w->unusable) return 0;
  s = gnmr__carve(ctl->units, r->n);
  return gnmr__unit_step(r, &s, norms, out, u);
}

/* The select's start: the step's result (status), k = min(candidates,
   free slots) of max_recovering with `locked` units still locked (rule 7,
   gnmr__admit_count), the whole key still open. */
static inline GNMR_HOSTDEV void
gnmr_cuda__select_start(gnmr_cuda_select *sel, int32_t status,
                        uint32_t candidates, uint32_t locked,
                        uint32_t max_recovering) {
  gnmr__tally t;
  memset(&t, 0, sizeof t);
  t.candidates = candidates;
  t.locked = locked;
  sel->status = status;
  sel->candidates = candidates;
  sel->k = gnmr__admit_count(&t, max_recovering);
  sel->hi = 0;
  sel->lo = 0;
  sel->depth = 0;
  sel->need = sel->k;
  sel->left = candidates;
}

/* The select's state but its counts, from src to dst (the grid's select
   keeps it in w->sel between launches; a block works on a shared copy). */
static inline GNMR_HOSTDEV void
gnmr_cuda__select_copy_state(gnmr_cuda_select *dst,
                             const gnmr_cuda_select *src) {
  dst->hi = src->hi;
  dst->lo = src->lo;
  dst->depth = src->depth;
  dst->need = src->need;
  dst->left = src->left;
  dst->k = src->k;
  dst->candidates = src->candidates;
  dst->status = src->status;
}

/* The step's result so far: GNMR_ESTATE if the scan found the controller
   not usable (gnmr__usable, checked once at the step's start: nothing the
   step does before the commit changes what it checks, so the admit does
   not check again), GNMR_ENORM for a finite negative norm, else GNMR_OK. */
static inline GNMR_HOSTDEV int32_t
gnmr_cuda__step_status(const gnmr_cuda_work *w) {
  return w->unusable ? GNMR_ESTATE : w->negative ? GNMR_ENORM : GNMR_OK;
}

/* admit, thread 0 first: the step's result and the select's start. */
static inline GNMR_HOSTDEV void
gnmr_cuda__admit_begin(gnmr_cuda_select *sel, const gnmr_ctl *ctl,
                       const gnmr_cuda_work *w) {
  gnmr_cuda__select_start(sel, gnmr_cuda__step_status(w), w->t.candidates,
                          w->t.locked, ctl->cfg.max_recovering);
}

/* 1 while the select has a digit to fix (read by every thread). */
static inline GNMR_HOSTDEV int
gnmr_cuda__select_more(const gnmr_cuda_select *sel) {
  return sel->status == GNMR_OK && sel->need > 0 && sel->need < sel->left &&
         sel->depth < 96;
}

static inline GNMR_HOSTDEV uint64_t gnmr_cuda__key_hi(const gnmr__soa *s,
                                                      uint32_t u) {
  uint64_t bits;
  memcpy(&bits, &s->score[u], 8);
  return bits;
}

/* Compares the top sel->depth bits of key (hi, lo) with the prefix:
   -1 below, 0 equal, 1 above. */
static inline GNMR_HOSTDEV int
gnmr_cuda__cmp_prefix(const gnmr_cuda_select *sel, uint64_t hi, uint32_t lo) {
  const uint32_t d = sel->depth;
  if (d <= 64) {
    const uint64_t top = d == 0 ? 0 : hi & (~(uint64_t)0 << (64 - d));
    return top < sel->hi ? -1 : top > sel->hi;
  }
  if (hi != sel->hi) return hi < sel->hi ? -1 : 1;
  lo &= ~(uint32_t)0 << (96 - d);
  return lo < sel->lo ? -1 : lo > sel->lo;
}

/* The 8-bit digit below the prefix. */
static inline GNMR_HOSTDEV uint32_t
gnmr_cuda__digit(const gnmr_cuda_select *sel, uint64_t hi, uint32_t lo) {
  const uint32_t d = sel->depth;
  return d < 64 ? (uint32_t)(hi >> (56 - d)) & 0xFFu
                : (lo >> (24 - (d - 64))) & 0xFFu;
}

/* The first digit (the key's top 8 bits) of candidate u: what the select
   counts before any digit is fixed. */
static inline GNMR_HOSTDEV uint32_t gnmr_cuda__first_digit(const gnmr__soa *s,
                                                           uint32_t u) {
  return (uint32_t)(gnmr_cuda__key_hi(s, u) >> 56);
}

#if defined(__CUDA_ARCH__)
#define GNMR_CUDA__SHARED_INC(p) atomicAdd((p), 1u)
#else
#define GNMR_CUDA__SHARED_INC(p) (*(p) += 1u)
#endif

/* admit, every thread t of T: clear the histogram. */
static inline GNMR_HOSTDEV void
gnmr_cuda__select_clear(gnmr_cuda_select *sel, uint32_t t, uint32_t T) {
  uint32_t b;
  for (b = t; b < 256; b += T) sel->hist[b] = 0;
}

/* Every thread t of T (a block's, or the grid's: t the thread's index in
   the grid): count into hist the next digit of the candidates t, t + T, ...
   that match the prefix. */
static inline GNMR_HOSTDEV void
gnmr_cuda__select_count_into(const gnmr_cuda_select *sel, const gnmr__soa *s,
                             uint32_t *hist, uint32_t t, uint32_t T) {
  uint32_t i;
  for (i = t; i < sel->candidates; i += T) {
    const uint32_t u = s->heap[i];
    const uint64_t hi = gnmr_cuda__key_hi(s, u);
    if (gnmr_cuda__cmp_prefix(sel, hi, ~u) == 0)
      GNMR_CUDA__SHARED_INC(&hist[gnmr_cuda__digit(sel, hi, ~u)]);
  }
}

/* admit, every thread t of T: count the next digit of the candidates that
   match the prefix. */
static inline GNMR_HOSTDEV void gnmr_cuda__select_count(gnmr_cuda_select *sel,
                                                        const gnmr__soa *s,
                                                        uint32_t t,
                                                        uint32_t T) {
  gnmr_cuda__select_count_into(sel, s, sel->hist, t, T);
}

/* admit, every thread t of T (after the count): the chunks' counts. */
static inline GNMR_HOSTDEV void
gnmr_cuda__select_chunks(gnmr_cuda_select *sel, uint32_t t, uint32_t T) {
  uint32_t c, d;
  for (c = t; c < 16; c += T) {
    uint32_t sum = 0;
    for (d = 16 * c; d < 16 * c + 16; d++) sum += sel->hist[d];
    sel->chunk[c] = sum;
  }
}

/* admit, every thread t of T (after the chunks): the digit that holds the
   need-th best key, the one d with over(d) < need <= over(d) + hist[d],
   over(d) the count of the digits above d (counts are exact, so one d
   fits), and the digit fixed by the thread that finds it: need is cut by
   over(d), left becomes hist[d], the prefix takes d. Each thread tries its
   digits with at most 30 additions, instead of one thread walking down
   256. need: sel->need as every thread read it before the chunks' barrier
   (the finder rewrites it in this phase); the others read only the counts
   and the chunks, which no thread writes here. */
static inline GNMR_HOSTDEV void gnmr_cuda__select_find(gnmr_cuda_select *sel,
                                                       uint32_t need,
                                                       uint32_t t, uint32_t T) {
  uint32_t d, j;
  for (d = t; d < 256; d += T) {
    uint32_t over = 0;
    for (j = d / 16 + 1; j < 16; j++) over += sel->chunk[j];
    for (j = d + 1; j < d / 16 * 16 + 16; j++) over += sel->hist[j];
    if (over < need && need - over <= sel->hist[d]) {
      sel->digit = d;
      sel->over = over;
      sel->need = need - over;
      sel->left = sel->hist[d];
      if (sel->depth < 64)
        sel->hi |= (uint64_t)d << (56 - sel->depth);
      else
        sel->lo |= d << (24 - (sel->depth - 64));
      sel->depth += 8;
    }
  }
}

/* admit, every thread t of T: rule 7 for the listed candidates. Admitted:
   k > 0 and a key at or above the prefix (after the select, exactly the k
   best). */
static inline GNMR_HOSTDEV void
gnmr_cuda__admit_units(const gnmr_cuda_select *sel, const gnmr__soa *s,
                       gnmr_decision *out, uint32_t lock_steps, uint32_t t,
                       uint32_t T) {
  uint32_t i;
  for (i = t; i < sel->candidates; i += T) {
    const uint32_t u = s->heap[i];
    if (sel->k > 0 &&
        gnmr_cuda__cmp_prefix(sel, gnmr_cuda__key_hi(s, u), ~u) >= 0) {
      s->lock[u] = lock_steps;
      s->cooldown[u] = 0;
      s->admissions[u]++;
      if (out) out[u].action = GNMR_ACTION_RECOVER;
    } else {
      s->over_budget[u]++;
      if (out) out[u].flags |= GNMR_FLAG_OVER_BUDGET;
    }
    s->score[u] = 0.0;
  }
}

/* admit, thread 0 last: the controller's totals and report (as gnmr_step's
   phase 7) and the scratch cleared for the next step (the bins are the
   verdict's to clear). */
static inline GNMR_HOSTDEV void
gnmr_cuda__admit_end(const gnmr_cuda_select *sel, gnmr_ctl *ctl,
                     gnmr_cuda_work *w) {
  if (sel->status == GNMR_OK) {
    gnmr__step_totals(ctl, &w->t, &w->report, sel->k);
    gnmr__commit(ctl);
  } else if (w->first_error == GNMR_OK) {
    w->first_error = sel->status;
  }
  w->status = sel->status;
  memset(&w->t, 0, sizeof w->t);
  w->negative = w->unusable = 0;
  w->finite = w->settled = w->up = 0;
}

/* The placer's kernel, one thread: gnmr_place_step itself; status[0] its
   code, status[1] the first refused step's. */
static inline GNMR_HOSTDEV void
gnmr_cuda__place_one(gnmr_place *pl, const double *update, const double *qerr,
                     uint8_t *high, int32_t *status) {
  const int rc = gnmr_place_step(pl, update, qerr, high);
  status[0] = (int32_t)rc;
  if (rc != GNMR_OK && status[1] == GNMR_OK) status[1] = (int32_t)rc;
}

/* One gradient element times its unit's scale, in double (the kernel
   rounds it once to the tensor's type). Scale 0 writes 0: rule 8 gives 0
   to a non-finite norm, whose gradient holds the NaN or Inf, and NaN * 0
   is NaN (the first GPU run of 0.4: train_step's one NaN, multiplied by
   0, reached the update and the unit's parameter stayed NaN for the rest of
   the run). */
static inline GNMR_HOSTDEV double gnmr_cuda__scaled(double x, double scale) {
  return scale == 0.0 ? 0.0 : x * scale;
}

/* ---- the block's counts: a ballot per warp, two barriers --------------
   A block counts its threads' events (the scan's finite, settled and up;
   the units' tally) without a barrier per count: each warp counts each
   event with a ballot, its lane 0 writes the warp's counts in a row of a
   shared table, one barrier, then thread k adds event k down the column
   (integers: any order gives the same sums). A second barrier before the
   table is written again. The events are a thread's bits (bit k: event k
   holds); the table holds GNMR_CUDA__COUNT_WARPS rows of
   GNMR_CUDA__COUNTS. */
#define GNMR_CUDA__COUNT_WARPS (GNMR_CUDA_ADMIT_THREADS / 32)
#define GNMR_CUDA__COUNTS GNMR__TALLY_N
/* the scan's events */
#define GNMR_CUDA__FINITE 0
#define GNMR_CUDA__SETTLED 1
#define GNMR_CUDA__UP 2

/* The scan's bits of one unit (code: gnmr_cuda__scan's). */
static inline GNMR_HOSTDEV unsigned gnmr_cuda__scan_bits(uint32_t code,
                                                         int up) {
  return (unsigned)(code != GNMR_CUDA__NOT_FINITE) << GNMR_CUDA__FINITE |
         (unsigned)(code < GNMR_CUDA_BINS) << GNMR_CUDA__SETTLED |
         (unsigned)(up != 0) << GNMR_CUDA__UP;
}

/* The tally's bits of one unit: bit i for field i of gnmr.h's tally (in
   its order), from gnmr__unit_step's GNMR__EV_* bits. */
static inline GNMR_HOSTDEV unsigned gnmr_cuda__tally_bits(unsigned ev) {
  unsigned bits = 0;
#define GNMR_CUDA__BIT(name, type, bit)                                        \
  bits |= (unsigned)((ev & (bit)) != 0u) << GNMR__TALLY_AT_##name;
  GNMR__TALLY(GNMR_CUDA__BIT)
#undef GNMR_CUDA__BIT
  return bits;
}

/* Threads of the one-block kernel for n units (a multiple of 32, as the
   ballots of the counts need): one per unit up to the admit's 1024, at
   least 64 (the median's search). */
static inline GNMR_HOSTDEV uint32_t gnmr_cuda__fused_threads(uint32_t n) {
  const uint32_t warps = (n + 31) / 32;
  return n >= GNMR_CUDA_ADMIT_THREADS ? GNMR_CUDA_ADMIT_THREADS
         : warps > 2                  ? 32 * warps
                                      : 64;
}

/* Thread k: event k's count over the warps' rows (table: rows of
   GNMR_CUDA__COUNTS). */
static inline GNMR_HOSTDEV uint32_t gnmr_cuda__column(const uint32_t *table,
                                                      uint32_t warps,
                                                      uint32_t k) {
  uint32_t i, sum = 0;
  for (i = 0; i < warps; i++) sum += table[i * GNMR_CUDA__COUNTS + k];
  return sum;
}

/* Field k of a tally, plus v (the fused kernel's thread k: no other thread
   writes that field). The layout gnmr__tally_layout asserts: 64-bit fields
   first, then 32-bit ones. */
static inline GNMR_HOSTDEV void
gnmr_cuda__tally_field_add(gnmr__tally *t, uint32_t k, uint32_t v) {
  uint64_t *c64 = (uint64_t *)(void *)t;
  uint32_t *c32 = (uint32_t *)(void *)(c64 + GNMR__TALLY_WIDE);
  if (k < GNMR__TALLY_WIDE)
    c64[k] += v;
  else
    c32[k - GNMR__TALLY_WIDE] += v;
}

/* ---- CUDA -------------------------------------------------------------- */
#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

/* The block's counts of K events (bit k of bits: event k holds for this
   thread), every thread of the block calling it (blockDim.x a multiple of
   32, at most GNMR_CUDA_ADMIT_THREADS): a ballot per warp and event, the
   warp's counts into its row of table, two barriers (the second before the
   table is written again); returns event k's count in thread k < K, 0 in
   the others. */
static __device__ __forceinline__ uint32_t gnmr_cuda__block_count(
    unsigned bits, uint32_t K, uint32_t (*table)[GNMR_CUDA__COUNTS]) {
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  uint32_t sum = 0;
#pragma unroll
  for (uint32_t k = 0; k < GNMR_CUDA__COUNTS; k++) {
    if (k >= K) break;
    const uint32_t c = __popc(__ballot_sync(0xFFFFFFFFu, (bits >> k) & 1u));
    if (lane == 0) table[warp][k] = c;
  }
  __syncthreads();
  if (threadIdx.x < K)
    sum = gnmr_cuda__column(&table[0][0], blockDim.x / 32, threadIdx.x);
  __syncthreads();
  return sum;
}

/* The median's search in one block (at least 64 threads): the sums of
   64 bins, then its two phases, barriers between; m->bin is then every
   thread's to read. */
static __device__ __forceinline__ void
gnmr_cuda__median_phases(gnmr_cuda_median *m, const uint32_t *hist,
                         uint32_t *bin_sums, uint32_t settled) {
  const uint32_t t = threadIdx.x;
  if (t < 64) bin_sums[t] = gnmr_cuda__bin_sum(hist, t);
  __syncthreads();
  if (t < 64) gnmr_cuda__median_block(m, bin_sums, settled, t);
  __syncthreads();
  if (t < 64) gnmr_cuda__median_bin(m, hist, settled, t);
  __syncthreads();
}

/* Block b: units 256 b ... 256 b + 255 (the refusal check, and NOISE
   mode's rule N3 pass). */
static __global__ void __launch_bounds__(GNMR_CUDA_UNIT_THREADS)
    gnmr_cuda__scan_kernel(const gnmr_ctl *ctl, const float *norms, uint32_t n,
                           gnmr_cuda_work *w, double *block_sumsq) {
  __shared__ gnmr__rules r;
  __shared__ uint32_t hist[GNMR_CUDA_BINS];
  __shared__ double lanes[8];
  __shared__ uint32_t table[GNMR_CUDA__COUNT_WARPS][GNMR_CUDA__COUNTS];
  __shared__ int usable;
  const uint32_t t = threadIdx.x, b = blockIdx.x, u = 256 * b + t;
  gnmr__cuda_ieee_guard();
  if (t == 0) { /* the usability check and the rules on two warps */
    usable = gnmr__usable(ctl);
    if (!usable && b == 0) w->unusable = 1;
  }
  if (t == 32) gnmr__rules_of(ctl, &r);
  gnmr_cuda__check(norms, n, u, w);
  __syncthreads();
  if (!usable || !r.noise) return; /* the whole block */
  for (uint32_t i = t; i < GNMR_CUDA_BINS; i += blockDim.x) hist[i] = 0;
  __syncthreads();
  {
    const gnmr__soa s = gnmr__carve(ctl->units, n);
    int up;
    const uint32_t code = gnmr_cuda__scan(&r, &s, norms, u, &up);
    if (code < GNMR_CUDA_BINS) atomicAdd(&hist[code], 1u);
    if (t < 8) lanes[t] = gnmr_cuda__lane(norms, n, b, t);
    /* thread k: event k's count; its barriers order the lanes and the
       shared histogram's atomics before what follows */
    const uint32_t c =
        gnmr_cuda__block_count(gnmr_cuda__scan_bits(code, up), 3, table);
    if (t == 0) block_sumsq[b] = gnmr__fold8(lanes);
    if (t <= GNMR_CUDA__UP && c)
      atomicAdd(t == GNMR_CUDA__FINITE    ? &w->finite
                : t == GNMR_CUDA__SETTLED ? &w->settled
                                          : &w->up,
                c);
    for (uint32_t i = t; i < GNMR_CUDA_BINS; i += blockDim.x)
      if (hist[i]) atomicAdd(&w->hist[i], hist[i]);
  }
}

/* One block. NOISE mode: the bins into shared memory, the median's
   search, G's sum (the blocks' sums staged in shared memory, a block's
   worth at a time, added in order by thread 0), the verdict, the bins
   cleared for the next step. PAPER mode: the empty verdict only. */
static __global__ void __launch_bounds__(GNMR_CUDA_UNIT_THREADS)
    gnmr_cuda__verdict_kernel(gnmr_ctl *ctl, uint32_t n, gnmr_cuda_work *w,
                              const double *block_sumsq) {
  __shared__ uint32_t hist[GNMR_CUDA_BINS], bin_sums[64];
  __shared__ double staged[GNMR_CUDA_UNIT_THREADS];
  __shared__ gnmr_cuda_median m;
  const uint32_t t = threadIdx.x, T = blockDim.x;   /* n: the launch's, as */
  const uint32_t blocks = n / 256 + (n % 256 != 0); /* block_sumsq's */
  double sumsq = 0.0;                               /* thread 0's */
  if (ctl->cfg.rule != GNMR_RULE_NOISE) {           /* the whole block */
    if (t == 0) gnmr_cuda__verdict_rules(ctl, w, 0, 0.0);
    return;
  }
  for (uint32_t i = t; i < GNMR_CUDA_BINS; i += T) hist[i] = w->hist[i];
  __syncthreads();
  gnmr_cuda__median_phases(&m, hist, bin_sums, w->settled);
  for (uint32_t first = 0; first < blocks; first += T) {
    const uint32_t count = blocks - first < T ? blocks - first : T;
    if (t < count) staged[t] = block_sumsq[first + t];
    __syncthreads();
    if (t == 0) sumsq = gnmr_cuda__add_blocks(sumsq, staged, count);
    __syncthreads();
  }
  if (t == 0) gnmr_cuda__verdict_rules(ctl, w, m.bin, sumsq);
  for (uint32_t i = t; i < GNMR_CUDA_BINS; i += T) w->hist[i] = 0;
}

/* The totals of one pass of the units, summed over the block
   (gnmr_cuda__block_count, two barriers for gnmr.h's GNMR__TALLY_N
   fields), thread k adding field k to w: with an atomic (atomic, the grid's
   blocks) or plainly (the one-block kernel, the field thread k's alone). */
static __device__ __forceinline__ void
gnmr_cuda__count_units(unsigned ev, gnmr_cuda_work *w, int atomic,
                       uint32_t (*table)[GNMR_CUDA__COUNTS]) {
  const uint32_t k = threadIdx.x;
  const uint32_t sum =
      gnmr_cuda__block_count(gnmr_cuda__tally_bits(ev), GNMR__TALLY_N, table);
  if (k >= GNMR__TALLY_N || sum == 0) return;
  if (atomic) {
    /* gnmr__tally_layout asserts the layout read as arrays of 64 and 32
       bits */
    unsigned long long *c64 = (unsigned long long *)(void *)&w->t;
    uint32_t *c32 = (uint32_t *)(void *)(c64 + GNMR__TALLY_WIDE);
    if (k < GNMR__TALLY_WIDE)
      atomicAdd(c64 + k, (unsigned long long)sum);
    else
      atomicAdd(c32 + (k - GNMR__TALLY_WIDE), sum);
  } else {
    gnmr_cuda__tally_field_add(&w->t, k, sum);
  }
}

/* One digit of the select, its counts in sel->hist, fixed by the block
   (every thread of it calling): the chunks, then the digit found and fixed
   by its finder, a barrier after each. */
static __device__ __forceinline__ void
gnmr_cuda__select_digit(gnmr_cuda_select *sel) {
  const uint32_t t = threadIdx.x, T = blockDim.x, need = sel->need;
  gnmr_cuda__select_chunks(sel, t, T);
  __syncthreads();
  gnmr_cuda__select_find(sel, need, t, T);
  __syncthreads();
}

/* The select's remaining digits in one block (sel in shared memory, read
   by every thread after a barrier). */
static __device__ __forceinline__ void
gnmr_cuda__select_rest(gnmr_cuda_select *sel, const gnmr__soa *s) {
  const uint32_t t = threadIdx.x, T = blockDim.x;
  while (gnmr_cuda__select_more(sel)) {
    gnmr_cuda__select_clear(sel, t, T);
    __syncthreads();
    gnmr_cuda__select_count(sel, s, t, T);
    __syncthreads();
    gnmr_cuda__select_digit(sel);
  }
}

/* Every thread of the block, after its global writes: 1 in every thread of
   the launch's last block to get here (whose later reads then see every
   block's writes: a fence before the count, and one after), 0 in the
   others; the last block puts the count back to 0 for the next launch. */
static __device__ __forceinline__ int gnmr_cuda__last_block(uint32_t *arrived) {
  __shared__ int last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(arrived, 1u) == gridDim.x - 1;
    if (last) *arrived = 0;
  }
  __syncthreads();
  if (last) __threadfence();
  return last;
}

/* grid_select: the grid's select follows (above GNMR_CUDA_GRID_SELECT_MIN
   units). The units count its first digit as they list their candidates
   (a shared histogram a block, added into w->sel's), and the last block to
   finish starts the select (the tally's two counts it needs read from L2:
   every block's atomics are in) and fixes that digit: one pass launch
   fewer. */
static __global__ void __launch_bounds__(GNMR_CUDA_UNIT_THREADS)
    gnmr_cuda__units_kernel(const gnmr_ctl *ctl, const float *norms,
                            gnmr_decision *out, gnmr_cuda_work *w,
                            int grid_select) {
  __shared__ gnmr__rules r;
  __shared__ uint32_t listed, base;
  __shared__ uint32_t table[GNMR_CUDA__COUNT_WARPS][GNMR_CUDA__COUNTS];
  __shared__ gnmr_cuda_select sel; /* grid_select: the first digit */
  const uint32_t t = threadIdx.x, T = blockDim.x, u = blockIdx.x * T + t;
  unsigned ev;
  /* the verdict's rules, copied by the block's threads a byte each */
  for (uint32_t i = t; i < sizeof r; i += T)
    ((unsigned char *)(void *)&r)[i] =
        ((const unsigned char *)(const void *)&w->rules)[i];
  if (t == 0) listed = 0;
  if (grid_select) gnmr_cuda__select_clear(&sel, t, T);
  __syncthreads();
  ev = gnmr_cuda__unit(ctl, &r, norms, out, w, u);
  {
    const gnmr__soa s = gnmr__carve(ctl->units, r.n);
    /* the candidates: a place in the block's part of the list */
    const uint32_t at = ev & GNMR__EV_CANDIDATE ? atomicAdd(&listed, 1u) : 0;
    if (grid_select && (ev & GNMR__EV_CANDIDATE))
      atomicAdd(&sel.hist[gnmr_cuda__first_digit(&s, u)], 1u);
    gnmr_cuda__count_units(ev, w, 1, table); /* its barriers order the
                                                atomics */
    if (t == 0) base = listed ? atomicAdd(&w->t.candidates, listed) : 0;
    __syncthreads();
    if (ev & GNMR__EV_CANDIDATE) s.heap[base + at] = u;
    if (!grid_select) return; /* the whole launch */
    for (uint32_t b = t; b < 256; b += T)
      if (sel.hist[b]) atomicAdd(&w->sel.hist[b], sel.hist[b]);
    if (!gnmr_cuda__last_block(&w->arrived)) return;
    /* the last block: the grid's counts (from L2: other blocks' atomics),
       the global histogram cleared for the passes */
    for (uint32_t b = t; b < 256; b += T) {
      sel.hist[b] = __ldcg(&w->sel.hist[b]);
      w->sel.hist[b] = 0;
    }
    if (t == 0)
      gnmr_cuda__select_start(
          &sel, gnmr_cuda__step_status(w), atomicAdd(&w->t.candidates, 0u),
          atomicAdd(&w->t.locked, 0u), ctl->cfg.max_recovering);
    __syncthreads();
    if (gnmr_cuda__select_more(&sel)) gnmr_cuda__select_digit(&sel);
    if (t == 0) gnmr_cuda__select_copy_state(&w->sel, &sel);
  }
}

/* The admit kernel's body, for any number of threads in one block: the
   select, rule 7, the totals. */
static __device__ __forceinline__ void
gnmr_cuda__admit_block(gnmr_cuda_select *sel, gnmr_ctl *ctl, gnmr_decision *out,
                       gnmr_cuda_work *w) {
  const uint32_t t = threadIdx.x, T = blockDim.x;
  if (t == 0) gnmr_cuda__admit_begin(sel, ctl, w);
  __syncthreads();
  if (sel->status == GNMR_OK) {
    const gnmr__soa s = gnmr__carve(ctl->units, ctl->n_units);
    gnmr_cuda__select_rest(sel, &s);
    gnmr_cuda__admit_units(sel, &s, out, ctl->cfg.lock_steps, t, T);
  }
  __syncthreads();
  if (t == 0) gnmr_cuda__admit_end(sel, ctl, w);
}

/* ---- the select over the grid (above GNMR_CUDA_GRID_SELECT_MIN units) --
   The select's state lives in w->sel between launches. The units kernel's
   blocks count their candidates' first digit and its last block to finish
   starts the select (gnmr_cuda__select_start) and fixes that digit; each
   of GNMR_CUDA_GRID_PASSES pass launches counts one digit over the grid
   (every block its slice of the candidates into a shared histogram, added
   into w->sel's with integer atomics: any order, the same counts) and its
   last block to finish fixes the digit as the one-block select does (the
   same functions, on the same counts); the last pass's last block then
   finishes the select in one block. A launch whose select is done returns
   at once. Rule 7 itself (gnmr_cuda__admit_units) runs over the grid, and
   block 0's thread 0 ends the step. No host sync, no cooperative launch:
   capturable in a graph. */

/* One digit of the grid's select (blocks of any size, a multiple of 32);
   finish: the last pass, whose last block finishes the select. */
static __global__ void __launch_bounds__(GNMR_CUDA_ADMIT_THREADS)
    gnmr_cuda__select_pass_kernel(const gnmr_ctl *ctl, gnmr_cuda_work *w,
                                  int finish) {
  __shared__ gnmr_cuda_select sel;
  const uint32_t t = threadIdx.x, T = blockDim.x;
  gnmr_cuda_select *g = &w->sel;
  gnmr_cuda__select_clear(&sel, t, T);
  /* the prefix: w->sel changes only after every block read it */
  if (t == 0) gnmr_cuda__select_copy_state(&sel, g);
  __syncthreads();
  if (!gnmr_cuda__select_more(&sel)) return; /* the whole launch */
  {
    const gnmr__soa s = gnmr__carve(ctl->units, ctl->n_units);
    gnmr_cuda__select_count_into(&sel, &s, sel.hist, blockIdx.x * T + t,
                                 gridDim.x * T);
    __syncthreads();
    for (uint32_t b = t; b < 256; b += T)
      if (sel.hist[b]) atomicAdd(&g->hist[b], sel.hist[b]);
    if (!gnmr_cuda__last_block(&w->arrived)) return;
    /* the last block: the grid's counts (from L2: other blocks' atomics),
       the global histogram cleared for the next pass */
    for (uint32_t b = t; b < 256; b += T) {
      sel.hist[b] = __ldcg(&g->hist[b]);
      g->hist[b] = 0;
    }
    __syncthreads();
    gnmr_cuda__select_digit(&sel);
    if (finish) gnmr_cuda__select_rest(&sel, &s);
    if (t == 0) gnmr_cuda__select_copy_state(g, &sel);
  }
}

/* Rule 7 over the grid after the grid's select, then (block 0, thread 0)
   the totals: they read nothing rule 7 writes. */
static __global__ void __launch_bounds__(GNMR_CUDA_UNIT_THREADS)
    gnmr_cuda__admit_grid_kernel(gnmr_ctl *ctl, gnmr_decision *out,
                                 gnmr_cuda_work *w) {
  if (w->sel.status == GNMR_OK) {
    const gnmr__soa s = gnmr__carve(ctl->units, ctl->n_units);
    gnmr_cuda__admit_units(&w->sel, &s, out, ctl->cfg.lock_steps,
                           blockIdx.x * blockDim.x + threadIdx.x,
                           gridDim.x * blockDim.x);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0)
    gnmr_cuda__admit_end(&w->sel, ctl, w);
}

static __global__ void __launch_bounds__(GNMR_CUDA_ADMIT_THREADS)
    gnmr_cuda__admit_kernel(gnmr_ctl *ctl, gnmr_decision *out,
                            gnmr_cuda_work *w) {
  __shared__ gnmr_cuda_select sel;
  gnmr_cuda__admit_block(&sel, ctl, out, w);
}

/* Up to GNMR_CUDA_FUSED_MAX units: the four kernels' work in one block,
   barriers between the phases, one launch per step. */
static __global__ void __launch_bounds__(GNMR_CUDA_ADMIT_THREADS)
    gnmr_cuda__fused_kernel(gnmr_ctl *ctl, const float *norms, uint32_t n,
                            gnmr_decision *out, gnmr_cuda_work *w) {
  __shared__ gnmr__rules r;
  __shared__ gnmr_cuda_select sel;
  __shared__ uint32_t hist[GNMR_CUDA_BINS], bin_sums[64];
  __shared__ gnmr_cuda_median m;
  __shared__ double lanes[GNMR_CUDA_FUSED_MAX / 32];
  __shared__ double block_sumsq[GNMR_CUDA_FUSED_MAX / 256];
  __shared__ uint32_t table[GNMR_CUDA__COUNT_WARPS][GNMR_CUDA__COUNTS];
  __shared__ int usable;
  const uint32_t t = threadIdx.x, T = blockDim.x, blocks = (n + 255) / 256;
  uint32_t at;
  /* the prologue's two serial parts on two warps at once: the usability
     check (gnmr.h's seal) and the rules (gnmr.h's gnmr__rules_of) */
  if (t == 0) {
    usable = gnmr__usable(ctl);
    if (!usable) w->unusable = 1;
    m.bin = 0; /* read by the verdict only after the search */
  }
  if (t == 32) gnmr__rules_of(ctl, &r);
  for (at = t; at < GNMR_CUDA_BINS; at += T) hist[at] = 0;
  for (at = 0; at < n; at += T) gnmr_cuda__check(norms, n, at + t, w);
  __syncthreads();
  if (usable && r.noise) { /* the whole block */
    const gnmr__soa s = gnmr__carve(ctl->units, n);
    for (at = 0; at < n; at += T) { /* the same trip count in every thread */
      int up;
      const uint32_t code = gnmr_cuda__scan(&r, &s, norms, at + t, &up);
      if (code < GNMR_CUDA_BINS) atomicAdd(&hist[code], 1u);
      const uint32_t c =
          gnmr_cuda__block_count(gnmr_cuda__scan_bits(code, up), 3, table);
      if (t == GNMR_CUDA__FINITE) w->finite += c;
      if (t == GNMR_CUDA__SETTLED) w->settled += c;
      if (t == GNMR_CUDA__UP) w->up += c;
    }
    for (at = t; at < 8 * blocks; at += T)
      lanes[at] = gnmr_cuda__lane(norms, n, at / 8, at % 8);
    __syncthreads();
    for (at = t; at < blocks; at += T)
      block_sumsq[at] = gnmr__fold8(lanes + 8 * at);
    gnmr_cuda__median_phases(&m, hist, bin_sums, w->settled);
  }
  __syncthreads();
  if (t == 0) {
    gnmr_cuda__verdict(ctl, w, &r, m.bin,
                       usable && r.noise
                           ? gnmr_cuda__add_blocks(0.0, block_sumsq, blocks)
                           : 0.0);
    gnmr_cuda__rules_verdict(w, &r);
  }
  __syncthreads();
  for (at = 0; at < n; at += T) { /* the same trip count in every thread */
    const unsigned ev = gnmr_cuda__unit(ctl, &r, norms, out, w, at + t);
    if (ev & GNMR__EV_CANDIDATE)
      gnmr__carve(ctl->units, n).heap[atomicAdd(&w->t.candidates, 1u)] = at + t;
    gnmr_cuda__count_units(ev, w, 0, table);
  }
  __syncthreads();
  gnmr_cuda__admit_block(&sel, ctl, out, w);
}

/* x * scale in double (gnmr_cuda__scaled: 0 where the scale is 0), rounded
   once to the tensor's type; nothing after a refused step, whose decisions were
   not written (they hold the step before's). */
static __global__ void gnmr_cuda__scale_kernel(const gnmr_cuda_grad *grads,
                                               const gnmr_decision *decisions,
                                               const gnmr_cuda_work *w) {
  const gnmr_cuda_grad g = grads[blockIdx.y];
  double scale;
  uint64_t i;
  /* status first: after a refused first step decisions were never written */
  if (w->status != GNMR_OK) return;
  scale = decisions[g.unit].scale;
  if (scale == 1.0) return;
  for (i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < g.n;
       i += (uint64_t)gridDim.x * blockDim.x) {
    if (g.dtype == GNMR_DTYPE_F32) {
      float *x = (float *)g.data;
      x[i] = (float)gnmr_cuda__scaled((double)x[i], scale);
    } else if (g.dtype == GNMR_DTYPE_BF16) {
      __nv_bfloat16 *x = (__nv_bfloat16 *)g.data;
      x[i] = __double2bfloat16(
          gnmr_cuda__scaled((double)__bfloat162float(x[i]), scale));
    } else {
      __half *x = (__half *)g.data;
      x[i] =
          __double2half(gnmr_cuda__scaled((double)__half2float(x[i]), scale));
    }
  }
}

static int gnmr_cuda__fail(gnmr_cuda_ctl *gc, cudaError_t e) {
  if (e == cudaSuccess) return GNMR_OK;
  gc->cuda_error = e;
  return GNMR_CUDA_ECUDA;
}

/* The host controller's image (its units pointer the device's) and slots
   into gc's device memory; the work cleared. */
static int gnmr_cuda__put(gnmr_cuda_ctl *gc, const gnmr_ctl *host) {
  gnmr_ctl image = *host;
  /* The device synchronised before and after: no step on any stream (a
     non-blocking one included) runs over the copy, and the copies have
     landed (a pageable copy returns once staged) when this returns. */
  cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaMemset(gc->work, 0, sizeof(gnmr_cuda_work));
  if (e == cudaSuccess && gc->n_units > 0)
    e = cudaMemcpy(gc->slots, host->units, sizeof *gc->slots * gc->n_units,
                   cudaMemcpyHostToDevice);
  image.units = gc->slots;
  if (e == cudaSuccess)
    e = cudaMemcpy(gc->ctl, &image, sizeof image, cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  return gnmr_cuda__fail(gc, e);
}

int gnmr_cuda_ctl_create(gnmr_cuda_ctl *gc, const gnmr_ctl *host) {
  const uint32_t n = host ? host->n_units : 0;
  const size_t blocks = n / 256 + (n % 256 != 0);
  cudaError_t e;
  int rc;
  if (!gc || !host) return GNMR_EINVAL;
  memset(gc, 0, sizeof *gc);
  if (!gnmr__usable(host)) return GNMR_ESTATE;
  gc->n_units = n;
  e = cudaMalloc((void **)&gc->ctl, sizeof *gc->ctl);
  if (e == cudaSuccess)
    e = cudaMalloc((void **)&gc->slots, sizeof *gc->slots * (n ? n : 1));
  if (e == cudaSuccess)
    e = cudaMalloc((void **)&gc->work, sizeof(gnmr_cuda_work));
  if (e == cudaSuccess)
    e = cudaMalloc((void **)&gc->block_sumsq,
                   sizeof(double) * (blocks ? blocks : 1));
  if (e == cudaSuccess) /* the verdict reads it even where the scan stopped */
    e = cudaMemset(gc->block_sumsq, 0, sizeof(double) * (blocks ? blocks : 1));
  rc = gnmr_cuda__fail(gc, e);
  if (rc == GNMR_OK) rc = gnmr_cuda__put(gc, host);
  if (rc != GNMR_OK) {
    e = gc->cuda_error;
    gnmr_cuda_ctl_destroy(gc);
    gc->cuda_error = e;
    return rc;
  }
  /* device addresses, computed on the host (no access) */
  gc->lock = gnmr__carve(gc->slots, n).lock;
  gc->report =
      (const gnmr_step_report *)(const void *)((const char *)gc->ctl +
                                               offsetof(gnmr_ctl, report));
  return GNMR_OK;
}

int gnmr_cuda_ctl_upload(gnmr_cuda_ctl *gc, const gnmr_ctl *host) {
  if (!gc || !gc->ctl || !host) return GNMR_EINVAL;
  if (!gnmr__usable(host)) return GNMR_ESTATE;
  if (host->n_units != gc->n_units) return GNMR_EMISMATCH;
  return gnmr_cuda__put(gc, host);
}

int gnmr_cuda_ctl_download(gnmr_cuda_ctl *gc, gnmr_ctl *host) {
  gnmr_ctl image;
  cudaError_t e;
  if (!gc || !gc->ctl || !host) return GNMR_EINVAL;
  if (!gnmr__usable(host)) return GNMR_ESTATE;
  if (host->n_units != gc->n_units) return GNMR_EMISMATCH;
  e = cudaDeviceSynchronize(); /* the steps on every stream done */
  if (e == cudaSuccess)
    e = cudaMemcpy(&image, gc->ctl, sizeof image, cudaMemcpyDeviceToHost);
  if (e == cudaSuccess && gc->n_units > 0)
    e = cudaMemcpy(host->units, gc->slots, sizeof *gc->slots * gc->n_units,
                   cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) return gnmr_cuda__fail(gc, e);
  /* every field (gen and seal included: the slots' header came with the
     slots), the host's own slots pointer kept */
  image.units = host->units;
  *host = image;
  return GNMR_OK;
}

void gnmr_cuda_ctl_destroy(gnmr_cuda_ctl *gc) {
  if (!gc) return;
  cudaFree(gc->ctl); /* cudaFree(NULL) does nothing */
  cudaFree(gc->slots);
  cudaFree(gc->work);
  cudaFree(gc->block_sumsq);
  memset(gc, 0, sizeof *gc);
}

int gnmr_cuda_step(gnmr_cuda_ctl *gc, const float *norms, gnmr_decision *out,
                   cudaStream_t stream) {
  uint32_t n, blocks;
  if (!gc || !gc->ctl || (gc->n_units > 0 && !norms)) return GNMR_EINVAL;
  n = gc->n_units;
  blocks = n / GNMR_CUDA_UNIT_THREADS + (n % GNMR_CUDA_UNIT_THREADS != 0);
  if (n <= GNMR_CUDA_FUSED_MAX) {
    gnmr_cuda__fused_kernel<<<1, gnmr_cuda__fused_threads(n), 0, stream>>>(
        gc->ctl, norms, n, out, gc->work);
    return gnmr_cuda__fail(gc, cudaGetLastError());
  }
  gnmr_cuda__scan_kernel<<<blocks, GNMR_CUDA_UNIT_THREADS, 0, stream>>>(
      gc->ctl, norms, n, gc->work, gc->block_sumsq);
  gnmr_cuda__verdict_kernel<<<1, GNMR_CUDA_UNIT_THREADS, 0, stream>>>(
      gc->ctl, n, gc->work, gc->block_sumsq);
  gnmr_cuda__units_kernel<<<blocks, GNMR_CUDA_UNIT_THREADS, 0, stream>>>(
      gc->ctl, norms, out, gc->work, n > GNMR_CUDA_GRID_SELECT_MIN);
  if (n <= GNMR_CUDA_GRID_SELECT_MIN) {
    gnmr_cuda__admit_kernel<<<1, GNMR_CUDA_ADMIT_THREADS, 0, stream>>>(
        gc->ctl, out, gc->work);
  } else {
    const uint32_t pass_blocks =
        (n + GNMR_CUDA_ADMIT_THREADS - 1) / GNMR_CUDA_ADMIT_THREADS;
    for (int p = 0; p < GNMR_CUDA_GRID_PASSES; p++)
      gnmr_cuda__select_pass_kernel<<<pass_blocks, GNMR_CUDA_ADMIT_THREADS, 0,
                                      stream>>>(gc->ctl, gc->work,
                                                p + 1 == GNMR_CUDA_GRID_PASSES);
    gnmr_cuda__admit_grid_kernel<<<blocks, GNMR_CUDA_UNIT_THREADS, 0, stream>>>(
        gc->ctl, out, gc->work);
  }
  return gnmr_cuda__fail(gc, cudaGetLastError());
}

int gnmr_cuda_scale_grads(gnmr_cuda_ctl *gc, const gnmr_cuda_grad *grads,
                          uint32_t n_grads, uint64_t max_elems,
                          const gnmr_decision *decisions, cudaStream_t stream) {
  const uint64_t per = (max_elems + 255) / 256;
  const dim3 grid((unsigned)(per < 1 ? 1 : per > 1024 ? 1024 : per), n_grads);
  if (!gc || !gc->work) return GNMR_EINVAL;
  if (n_grads == 0) return GNMR_OK;
  if (!grads || !decisions || n_grads > 65535) return GNMR_EINVAL;
  gnmr_cuda__scale_kernel<<<grid, 256, 0, stream>>>(grads, decisions, gc->work);
  return gnmr_cuda__fail(gc, cudaGetLastError());
}

int gnmr_cuda_report_async(gnmr_cuda_ctl *gc, gnmr_step_report *dst,
                           cudaStream_t stream) {
  if (!gc || !gc->report || !dst) return GNMR_EINVAL;
  return gnmr_cuda__fail(gc, cudaMemcpyAsync(dst, gc->report, sizeof *dst,
                                             cudaMemcpyDefault, stream));
}

/* Thread w: word w of the path bits. */
static __global__ void gnmr_cuda__path_kernel(const uint32_t *lock, uint32_t n,
                                              uint32_t *words) {
  const uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;
  if (w < GNMR_CUDA_PATH_WORDS(n)) words[w] = gnmr_cuda_path_word(lock, n, w);
}

void gnmr_cuda_paths_destroy(gnmr_cuda_paths *p) {
  if (!p) return;
  cudaFreeHost(p->turns.host[0]); /* NULL does nothing */
  cudaFreeHost(p->turns.host[1]);
  cudaFree(p->device);
  if (p->ready[0]) cudaEventDestroy(p->ready[0]);
  if (p->ready[1]) cudaEventDestroy(p->ready[1]);
  memset(p, 0, sizeof *p);
}

int gnmr_cuda_paths_create(gnmr_cuda_paths *p, const gnmr_ctl *host) {
  const uint32_t n = host ? host->n_units : 0;
  const uint32_t words = GNMR_CUDA_PATH_WORDS(n);
  const size_t bytes = sizeof(uint32_t) * (words ? words : 1);
  cudaError_t e;
  int i;
  if (!p || !host) return GNMR_EINVAL;
  memset(p, 0, sizeof *p);
  if (!gnmr__usable(host)) return GNMR_ESTATE;
  p->n_units = n;
  p->words = words;
  e = cudaMalloc((void **)&p->device, bytes);
  for (i = 0; i < 2 && e == cudaSuccess; i++) {
    e = cudaMallocHost((void **)&p->turns.host[i], bytes);
    if (e == cudaSuccess)
      e = cudaEventCreateWithFlags(&p->ready[i], cudaEventDisableTiming);
  }
  if (e != cudaSuccess) {
    gnmr_cuda_paths_destroy(p);
    p->cuda_error = e;
    return GNMR_CUDA_ECUDA;
  }
  {
    const uint32_t *lock = gnmr__carve(host->units, n).lock;
    uint32_t w;
    for (w = 0; w < words; w++)
      p->turns.host[0][w] = p->turns.host[1][w] =
          gnmr_cuda_path_word(lock, n, w);
  }
  return GNMR_OK;
}

int gnmr_cuda_paths_publish(gnmr_cuda_paths *p, const gnmr_cuda_ctl *gc,
                            cudaStream_t stream) {
  uint32_t *dst;
  cudaError_t e = cudaSuccess;
  if (!p || !p->device || !gc || !gc->ctl) return GNMR_EINVAL;
  if (gc->n_units != p->n_units) return GNMR_EMISMATCH;
  dst = gnmr_cuda_path_target(&p->turns);
  if (p->words > 0) {
    gnmr_cuda__path_kernel<<<(p->words + 255) / 256, 256, 0, stream>>>(
        gc->lock, p->n_units, p->device);
    e = cudaGetLastError();
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(dst, p->device, sizeof(uint32_t) * p->words,
                          cudaMemcpyDeviceToHost, stream);
  }
  if (e == cudaSuccess)
    e = cudaEventRecord(p->ready[p->turns.published % 2], stream);
  if (e != cudaSuccess) {
    p->cuda_error = e;
    return GNMR_CUDA_ECUDA;
  }
  p->turns.published++;
  return GNMR_OK;
}

int gnmr_cuda_paths_wait(gnmr_cuda_paths *p, const uint32_t **bits) {
  if (!p || !p->device || !bits) return GNMR_EINVAL;
  if (p->turns.published > 0) {
    const cudaError_t e =
        cudaEventSynchronize(p->ready[(p->turns.published + 1) % 2]);
    if (e != cudaSuccess) {
      p->cuda_error = e;
      return GNMR_CUDA_ECUDA;
    }
  }
  *bits = gnmr_cuda_path_latest(&p->turns);
  return GNMR_OK;
}

int gnmr_cuda_status(gnmr_cuda_ctl *gc, int *last, int *first_error) {
  gnmr_cuda_work w;
  cudaError_t e;
  if (!gc || !gc->work) return GNMR_EINVAL;
  e = cudaDeviceSynchronize(); /* the steps on every stream done */
  if (e == cudaSuccess)
    e = cudaMemcpy(&w, gc->work, sizeof w, cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) return gnmr_cuda__fail(gc, e);
  if (last) *last = w.status;
  if (first_error) *first_error = w.first_error;
  return GNMR_OK;
}

static __global__ void gnmr_cuda__place_kernel(gnmr_place *pl,
                                               const double *update,
                                               const double *qerr,
                                               uint8_t *high, int32_t *status) {
  gnmr__cuda_ieee_guard();
  if (blockIdx.x == 0 && threadIdx.x == 0)
    gnmr_cuda__place_one(pl, update, qerr, high, status);
}

void gnmr_cuda_place_destroy(gnmr_cuda_place *gp) {
  if (!gp) return;
  cudaFree(gp->pl); /* NULL does nothing */
  cudaFree(gp->units);
  cudaFree(gp->status);
  memset(gp, 0, sizeof *gp);
}

int gnmr_cuda_place_create(gnmr_cuda_place *gp, const gnmr_place *host) {
  gnmr_place image;
  cudaError_t e;
  if (!gp || !host) return GNMR_EINVAL;
  memset(gp, 0, sizeof *gp);
  if (gnmr_place_checkpoint_size(host) == 0) return GNMR_ESTATE;
  gp->n_units = host->n_units;
  image = *host;
  e = cudaMalloc((void **)&gp->pl, sizeof *gp->pl);
  if (e == cudaSuccess)
    e = cudaMalloc((void **)&gp->units, sizeof *gp->units * gp->n_units);
  if (e == cudaSuccess)
    e = cudaMalloc((void **)&gp->status, 2 * sizeof(int32_t));
  if (e == cudaSuccess) e = cudaMemset(gp->status, 0, 2 * sizeof(int32_t));
  if (e == cudaSuccess)
    e = cudaMemcpy(gp->units, host->units, sizeof *gp->units * gp->n_units,
                   cudaMemcpyHostToDevice);
  image.units = gp->units;
  if (e == cudaSuccess)
    e = cudaMemcpy(gp->pl, &image, sizeof image, cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    gnmr_cuda_place_destroy(gp);
    gp->cuda_error = e;
    return GNMR_CUDA_ECUDA;
  }
  return GNMR_OK;
}

int gnmr_cuda_place_step(gnmr_cuda_place *gp, const double *update,
                         const double *qerr, uint8_t *high,
                         cudaStream_t stream) {
  cudaError_t e;
  if (!gp || !gp->pl || !update || !qerr) return GNMR_EINVAL;
  gnmr_cuda__place_kernel<<<1, 1, 0, stream>>>(gp->pl, update, qerr, high,
                                               gp->status);
  e = cudaGetLastError();
  if (e == cudaSuccess) return GNMR_OK;
  gp->cuda_error = e;
  return GNMR_CUDA_ECUDA;
}

int gnmr_cuda_place_status(gnmr_cuda_place *gp, int *last, int *first_error) {
  int32_t st[2];
  cudaError_t e;
  if (!gp || !gp->status) return GNMR_EINVAL;
  e = cudaDeviceSynchronize();
  if (e == cudaSuccess)
    e = cudaMemcpy(st, gp->status, sizeof st, cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) {
    gp->cuda_error = e;
    return GNMR_CUDA_ECUDA;
  }
  if (last) *last = st[0];
  if (first_error) *first_error = st[1];
  return GNMR_OK;
}

int gnmr_cuda_place_download(gnmr_cuda_place *gp, gnmr_place *host) {
  gnmr_place image;
  cudaError_t e;
  if (!gp || !gp->pl || !host) return GNMR_EINVAL;
  if (gnmr_place_checkpoint_size(host) == 0) return GNMR_ESTATE;
  if (host->n_units != gp->n_units) return GNMR_EMISMATCH;
  e = cudaDeviceSynchronize();
  if (e == cudaSuccess)
    e = cudaMemcpy(&image, gp->pl, sizeof image, cudaMemcpyDeviceToHost);
  if (e == cudaSuccess)
    e = cudaMemcpy(host->units, gp->units, sizeof *gp->units * gp->n_units,
                   cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) {
    gp->cuda_error = e;
    return GNMR_CUDA_ECUDA;
  }
  image.units = host->units;
  *host = image;
  return GNMR_OK;
}
#endif /* __CUDACC__ */
#endif /* GNMR_CUDA_IMPLEMENTATION */
