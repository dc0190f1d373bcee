# lab/lab.mk - the lab's targets, included by the Makefile: the training
# demos (lab/train_stress.c, lab/train_lm.c), the closed-loop efficacy
# benchmark (lab/efficacy.c), the settings suite (lab/suite.c), the
# level-shift replay and the detection benchmark (lab/detect/). Paths are
# relative to the repository root, where make runs.

# The training stress demo. demo: the built-in synthetic task (no files
# needed); demo-full: Fashion-MNIST from FASHION; demo-sweep: the GNMR
# settings sweep on the built-in task. Outputs under demo-out/.
FASHION ?= /usr/share/datasets/fashion-mnist
DEMO_STRESS = --stress 8
$(B)/train_stress: lab/train_stress.c $(DEMO_HDRS) gnmr.h
	@mkdir -p $(@D)
	gcc $(CFLAGS_ALL) -o $@ $< -lm

demo: $(B)/train_stress
	$(B)/train_stress --steps 1000 --hidden 128,64,32 --seeds 2 \
	  $(DEMO_STRESS) --out demo-out

demo-full: $(B)/train_stress
	@if [ ! -f $(FASHION)/train-images-idx3-ubyte.gz ] && \
	    [ ! -f $(FASHION)/train-images-idx3-ubyte ]; then \
	  echo "demo-full: Fashion-MNIST not found in $(FASHION)."; \
	  echo "  Debian/Ubuntu: apt-get install dataset-fashion-mnist,"; \
	  echo "  or make demo-full FASHION=DIR with the four IDX files."; \
	  exit 1; fi
	$(B)/train_stress --data $(FASHION) --steps 2000 --seeds 3 \
	  $(DEMO_STRESS) --out demo-out/full

demo-sweep: $(B)/train_stress
	$(B)/train_stress --sweep --steps 1000 --hidden 128,64,32 --seeds 3 \
	  $(DEMO_STRESS) --out demo-out/sweep

# The language-model demo (lab/train_lm.c) on the text of Debian's
# fortunes package. Two stress settings, every arm x 3 seeds, outputs under
# build/demo-lm/{natural,injected}/; demo-lm runs the two side by side, one
# GEMM thread each (the same bits as any thread count; LM_THREADS=2 make
# demo-lm-natural runs one setting on both cores). The settings were found
# with demo-lm-sweep (bench/RESULTS.md, "LM demo: how its settings were
# found").
FORTUNES_DEB = /usr/share/games/fortunes
FORTUNES ?= $(FORTUNES_DEB)
LM_THREADS ?= 2
LM_RUN = $(B)/train_lm --data $(FORTUNES) --threads $(LM_THREADS)
LM_NATURAL = --format e2m1 --lr 2e-3
LM_INJECTED = --format e4m3 --lr 2e-3 --stress 24
LM_ARMS7 = f32,lowp,clip,adagc,gnmr,gnmr-noise,gnmr-global
$(B)/train_lm: lab/train_lm.c $(DEMO_HDRS) gnmr.h
	@mkdir -p $(@D)
	gcc $(CFLAGS_ALL) -o $@ $< -pthread -lm

# The Debian directory must hold the full package (fortunes-min alone has
# 3 of its 43 files); another directory only has to exist.
fortunes-check:
	@if [ ! -d $(FORTUNES) ] || { [ "$(FORTUNES)" = "$(FORTUNES_DEB)" ] && \
	    [ ! -f $(FORTUNES)/linux ]; }; then \
	  echo "demo-lm: the fortune files are not in $(FORTUNES)."; \
	  echo "  Debian/Ubuntu: apt-get install fortunes,"; \
	  echo "  or make demo-lm FORTUNES=DIR with %-separated text files."; \
	  exit 1; fi

demo-lm: $(B)/train_lm fortunes-check
	$(MAKE) --no-print-directory -j2 LM_THREADS=1 demo-lm-natural \
	  demo-lm-injected

# f32-gnmr (the gnmr arm's control on the f32 model) runs in the natural
# setting only: the f32 path sees no faults, so it is the same run in both.
demo-lm-natural: $(B)/train_lm fortunes-check
	$(LM_RUN) --setting natural $(LM_NATURAL) --steps 1000 --seeds 3 \
	  --arms $(LM_ARMS7),f32-gnmr --out $(B)/demo-lm/natural

demo-lm-injected: $(B)/train_lm fortunes-check
	$(LM_RUN) --setting injected $(LM_INJECTED) --steps 1000 --seeds 3 \
	  --arms $(LM_ARMS7) --out $(B)/demo-lm/injected

demo-lm-quick: $(B)/train_lm fortunes-check
	$(LM_RUN) --setting injected $(LM_INJECTED) --steps 300 --eval 128 \
	  --out $(B)/demo-lm/quick

# f32 against lowp, every seed (bench/RESULTS.md, "LM demo: how its
# settings were found"): FP4 E2M1
# without injection, then FP8 E4M3 with 12 and 24 faults per 1000 steps.
demo-lm-sweep: $(B)/train_lm fortunes-check
	$(LM_RUN) --sweep --sweep-lrs 2e-3,3e-3 --sweep-formats e2m1 \
	  --steps 1000 --seeds 3 --out $(B)/demo-lm/sweep
	$(LM_RUN) --sweep --sweep-lrs 2e-3,3e-3 --sweep-formats e4m3 \
	  --stress 12 --steps 1000 --seeds 3 --out $(B)/demo-lm/sweep-stress12
	$(LM_RUN) --sweep --sweep-lrs 2e-3 --sweep-formats e4m3 \
	  --stress 24 --steps 1000 --seeds 3 --out $(B)/demo-lm/sweep-stress24

# The closed-loop efficacy benchmark (README "Does it help training?"):
# the arms of EFF_CORE, EFF_ABL, EFF_CLIPPED and EFF_FWD (lab/arms.h)
# on the same seeds, in five settings, then
# lab/efficacy.c reads every summary.csv and writes build/efficacy/{summary.csv,report.md,
# efficacy.svg}. A setting is a folder; its runs may come in parts.
#   lm-injected       LM demo, FP8 E4M3, 24 injected faults per 1000 steps
#   lm-injected-clip  the same, every arm on top of the global clip 1.0
#   lm-natural-clip   LM demo, FP4 E2M1 at lr 4e-3, no injection, on top of
#                     the global clip (lowp+clip 2.4-3.7% behind f32+clip)
#   mlp, mlp-clip     the MLP stress demo (built-in task, 8 faults per 1000)
#   mlp-fashion       the MLP on Fashion-MNIST, core arms (when installed)
# and four training events that are not faults, each clean (do
# no harm) and with the faults of mlp / lm-injected (-injected):
#   mlp-freeze, lm-freeze  a layer (LM: block 0) frozen for the first 20%
#                     of steps, its gradient norms exactly 0, then trained
#   mlp-shift, lm-shift    one unit reparametrised at 40% of the steps
#                     (W/10, output x 10): its gradient norm 10x for good,
#                     the training unchanged
# efficacy-quick is CI's lane: the LM injected setting at 300 steps, one
# seed, with one static and one measured placement arm, and the MLP settings
# at 2 seeds, about 3 minutes on 2 cores.
EFF = $(B)/efficacy
EFF_LM = $(B)/train_lm --data $(FORTUNES) --threads 1 --quiet --eval $(EFF_EVAL)
EFF_LM_INJ = $(EFF_LM) --format e4m3 --lr 2e-3 --stress 24
EFF_LM_NAT = $(EFF_LM) --format e2m1 --lr 4e-3 --global-clip 1.0
EFF_CORE = f32,lowp,clip,adagc,zclip,gnmr,gnmr-noise,gnmr-global,f32-gnmr
EFF_ABL = paper-pass,paper-clip-only,paper-tau3,paper-lock4,noise-pass,$\
  noise-clip-only,noise-nofall,noise-nofreeze,noise-z3,noise-warm16,noise-maxo4
EFF_CLIPPED = f32,lowp,adagc,zclip,gnmr,gnmr-noise,paper-pass,$\
  paper-clip-only,f32-gnmr
EFF_FWD = gnmr-fwd,paper-tau3-fwd
EFF_EVENT = f32,lowp,clip,adagc,zclip,gnmr,gnmr-shift-off,gnmr-noise,f32-gnmr
EFF_EVENT_LM = f32,lowp,adagc,gnmr,gnmr-shift-off,gnmr-noise
EFF_MLP_FREEZE = --freeze 1:20
EFF_MLP_SHIFT = --shift 2:40
EFF_LM_FREEZE = --freeze 0:20
EFF_LM_SHIFT_UNIT = 6
EFF_LM_SHIFT_PCT = 40
EFF_LM_SHIFT = --shift $(EFF_LM_SHIFT_UNIT):$(EFF_LM_SHIFT_PCT)
EFF_CSV_HEADER = setting,arm,seed,val_loss,gap_recovered,hf_unit_steps,$\
  hf_flops,loss_spikes,diverged,vs_f32_pct,val_loss_served,$\
  gap_recovered_served
EFF_MLP = $(B)/train_stress --quiet --stress 8 --hidden 128,64,32
EFF_MLP_CLEAN = $(B)/train_stress --quiet --hidden 128,64,32
EFF_LM_CLEAN = $(EFF_LM) --format e4m3 --lr 2e-3
EFF_SEEDS ?= 3
EFF_STEPS ?= 1000
EFF_MLP_SEEDS ?= 5
EFF_EVAL ?= 512
EFF_PARTS = eff-lm-inj-core eff-lm-inj-abl eff-lm-inj-clip eff-lm-nat-clip \
            eff-lm-inj-fwd eff-lm-inj-clip2 eff-lm-nat-clip2 eff-mlp \
            eff-mlp-fashion eff-mlp-events eff-lm-freeze eff-lm-freeze-inj \
            eff-lm-shift eff-lm-shift-inj

$(B)/efficacy_report: lab/efficacy.c
	@mkdir -p $(@D)
	gcc $(CFLAGS_ALL) -o $@ $< -lm

efficacy: $(B)/train_lm $(B)/train_stress $(B)/efficacy_report fortunes-check
	rm -rf $(EFF)
	$(MAKE) --no-print-directory -j2 $(EFF_PARTS)
	$(B)/efficacy_report $(EFF)

efficacy-quick: $(B)/train_lm $(B)/train_stress $(B)/efficacy_report \
                fortunes-check
	rm -rf $(EFF)
	$(MAKE) --no-print-directory -j2 EFF_SEEDS=1 EFF_STEPS=300 \
	  EFF_MLP_SEEDS=2 EFF_EVAL=128 EFF_EVENT=f32,lowp,gnmr,gnmr-noise \
	  eff-lm-inj-core eff-mlp eff-mlp-freeze eff-lm-inj-place
	$(B)/efficacy_report $(EFF) > $(EFF)/report.txt
	@head -1 $(EFF)/summary.csv | grep -qx '$(EFF_CSV_HEADER)' && \
	  for s in lm-injected mlp mlp-clip mlp-freeze; do \
	    grep -q "^$$s,gnmr,1," $(EFF)/summary.csv || exit 1; done && \
	  for a in place-nvfp4-20 place-gnmr-10; do \
	    grep -Eq "^lm-injected,$$a,1,[^,]+,[^,]*,[^,]+,0\.[0-9]+," \
	      $(EFF)/summary.csv || exit 1; done && \
	  grep -q '<circle' $(EFF)/efficacy.svg && \
	  grep -q '<circle' $(EFF)/frontier.svg || \
	  { echo "efficacy-quick: summary.csv, efficacy.svg or frontier.svg" \
	    "incomplete"; exit 1; }
	@grep -A12 '^### lm-injected$$' $(EFF)/report.md

eff-lm-inj-core:
	$(EFF_LM_INJ) --setting lm-injected --steps $(EFF_STEPS) \
	  --seeds $(EFF_SEEDS) \
	  --arms $(EFF_CORE) --out $(EFF)/lm-injected/core
eff-lm-inj-abl:
	$(EFF_LM_INJ) --setting lm-injected --steps $(EFF_STEPS) \
	  --seeds $(EFF_SEEDS) --arms $(EFF_ABL) --out $(EFF)/lm-injected/abl
eff-lm-inj-clip:
	$(EFF_LM_INJ) --global-clip 1.0 --setting lm-injected-clip \
	  --steps $(EFF_STEPS) --seeds $(EFF_SEEDS) --arms $(EFF_CLIPPED) \
	  --out $(EFF)/lm-injected-clip/all
eff-lm-nat-clip:
	$(EFF_LM_NAT) --setting lm-natural-clip --steps $(EFF_STEPS) \
	  --seeds $(EFF_SEEDS) --arms $(EFF_CLIPPED) --out $(EFF)/lm-natural-clip/all
eff-lm-inj-fwd:
	$(EFF_LM_INJ) --setting lm-injected --steps $(EFF_STEPS) \
	  --seeds $(EFF_SEEDS) --arms $(EFF_FWD) --out $(EFF)/lm-injected/fwd
eff-lm-inj-clip2:
	$(EFF_LM_INJ) --global-clip 1.0 --setting lm-injected-clip \
	  --steps $(EFF_STEPS) --seeds $(EFF_SEEDS) --arms paper-tau3,$(EFF_FWD) \
	  --out $(EFF)/lm-injected-clip/fwd
eff-lm-nat-clip2:
	$(EFF_LM_NAT) --setting lm-natural-clip --steps $(EFF_STEPS) \
	  --seeds $(EFF_SEEDS) --arms paper-tau3,$(EFF_FWD) \
	  --out $(EFF)/lm-natural-clip/fwd
# CI's placement arms: one static, one measured by the library's placer
# (gnmr.h, rules P1-P7), beside eff-lm-inj-core's f32 and lowp (their
# hf_flops must come through to the report).
eff-lm-inj-place:
	$(EFF_LM_INJ) --setting lm-injected --steps $(EFF_STEPS) \
	  --seeds $(EFF_SEEDS) --arms place-nvfp4-20,place-gnmr-10 \
	  --out $(EFF)/lm-injected/place
eff-mlp:
	$(EFF_MLP) --steps 1000 --seeds $(EFF_MLP_SEEDS) \
	  --arms $(EFF_CORE),$(EFF_FWD) --out $(EFF)/mlp/core
	$(EFF_MLP) --steps 1000 --seeds $(EFF_MLP_SEEDS) \
	  --arms $(EFF_ABL) --out $(EFF)/mlp/abl
	$(EFF_MLP) --steps 1000 --seeds $(EFF_MLP_SEEDS) --global-clip 1.0 \
	  --arms $(EFF_CLIPPED),paper-tau3,$(EFF_FWD) --out $(EFF)/mlp-clip/all
eff-mlp-fashion:
	@if [ -f $(FASHION)/train-images-idx3-ubyte.gz ] || \
	    [ -f $(FASHION)/train-images-idx3-ubyte ]; then \
	  $(B)/train_stress --quiet --data $(FASHION) --steps 2000 --stress 8 \
	    --seeds $(EFF_SEEDS) --arms $(EFF_CORE),$(EFF_FWD) \
	    --out $(EFF)/mlp-fashion/all; \
	else echo "efficacy: no Fashion-MNIST in $(FASHION): mlp-fashion skipped"; fi

eff-mlp-freeze:
	$(EFF_MLP_CLEAN) $(EFF_MLP_FREEZE) --seeds $(EFF_MLP_SEEDS) \
	  --arms $(EFF_EVENT) --out $(EFF)/mlp-freeze/core
eff-mlp-events: eff-mlp-freeze
	$(EFF_MLP) $(EFF_MLP_FREEZE) --seeds $(EFF_MLP_SEEDS) \
	  --arms $(EFF_EVENT) --out $(EFF)/mlp-freeze-injected/core
	$(EFF_MLP_CLEAN) $(EFF_MLP_SHIFT) --seeds $(EFF_MLP_SEEDS) \
	  --arms $(EFF_EVENT) --out $(EFF)/mlp-shift/core
	$(EFF_MLP) $(EFF_MLP_SHIFT) --seeds $(EFF_MLP_SEEDS) \
	  --arms $(EFF_EVENT) --out $(EFF)/mlp-shift-injected/core
eff-lm-freeze:
	$(EFF_LM_CLEAN) $(EFF_LM_FREEZE) --setting lm-freeze \
	  --steps $(EFF_STEPS) --seeds $(EFF_SEEDS) --arms $(EFF_EVENT_LM) \
	  --out $(EFF)/lm-freeze/core
eff-lm-freeze-inj:
	$(EFF_LM_INJ) $(EFF_LM_FREEZE) --setting lm-freeze-injected \
	  --steps $(EFF_STEPS) --seeds $(EFF_SEEDS) --arms $(EFF_EVENT_LM) \
	  --out $(EFF)/lm-freeze-injected/core
eff-lm-shift:
	$(EFF_LM_CLEAN) $(EFF_LM_SHIFT) --setting lm-shift \
	  --steps $(EFF_STEPS) --seeds $(EFF_SEEDS) --arms $(EFF_EVENT_LM) \
	  --out $(EFF)/lm-shift/core
eff-lm-shift-inj:
	$(EFF_LM_INJ) $(EFF_LM_SHIFT) --setting lm-shift-injected \
	  --steps $(EFF_STEPS) --seeds $(EFF_SEEDS) --arms $(EFF_EVENT_LM) \
	  --out $(EFF)/lm-shift-injected/core

# The level-shift rule's sweep: shift_steps P x shift_spread q
# (lab/arms.h ARM_SHIFT_Q) on the default (paper) rules, P at q 0.5
# and P 8, 16 at q 1 on the noise rules (gnmr-noise is P 16 q 0.5), beside
# the rule off, on the MLP settings with faults, with the training events
# and with both; then efficacy_report over them (build/efficacy-shift/).
EFF_SHIFT = $(B)/efficacy-shift
EFF_SHIFT_PQ = $(foreach p,4 8 16 32,$(foreach q,0.25 0.5 1,p$(p)-q$(q)))
EFF_SHIFT_ARMS = f32,lowp,gnmr-shift-off,noise-shift-off,gnmr-noise$\
  $(subst $(space),,$(foreach a,$(EFF_SHIFT_PQ),$(comma)shift-$(a)))$\
  ,noise-shift-p4-q0.5,noise-shift-p8-q0.5,noise-shift-p32-q0.5$\
  ,noise-shift-p8-q1,noise-shift-p16-q1
EFF_SHIFT_SEEDS ?= 5
comma := ,
empty :=
space := $(empty) $(empty)
efficacy-shift-sweep: $(B)/train_stress $(B)/efficacy_report
	rm -rf $(EFF_SHIFT)
	$(MAKE) --no-print-directory -j2 eff-shift-a eff-shift-b
	$(B)/efficacy_report $(EFF_SHIFT) > $(EFF_SHIFT)/report.txt
eff-shift-a:
	$(EFF_MLP) --seeds $(EFF_SHIFT_SEEDS) --arms $(EFF_SHIFT_ARMS) \
	  --out $(EFF_SHIFT)/mlp/all
	$(EFF_MLP_CLEAN) $(EFF_MLP_FREEZE) --seeds $(EFF_SHIFT_SEEDS) \
	  --arms $(EFF_SHIFT_ARMS) --out $(EFF_SHIFT)/mlp-freeze/all
	$(EFF_MLP) $(EFF_MLP_FREEZE) --seeds $(EFF_SHIFT_SEEDS) \
	  --arms $(EFF_SHIFT_ARMS) --out $(EFF_SHIFT)/mlp-freeze-injected/all
eff-shift-b:
	$(EFF_MLP_CLEAN) $(EFF_MLP_SHIFT) --seeds $(EFF_SHIFT_SEEDS) \
	  --arms $(EFF_SHIFT_ARMS) --out $(EFF_SHIFT)/mlp-shift/all
	$(EFF_MLP) $(EFF_MLP_SHIFT) --seeds $(EFF_SHIFT_SEEDS) \
	  --arms $(EFF_SHIFT_ARMS) --out $(EFF_SHIFT)/mlp-shift-injected/all

# Rule 9 open loop on the LM's own norms (lab/shift_replay.c): the grid
# of P x q over the traces of the gnmr arm that make efficacy wrote; the
# shifted unit from the shift on, and every unit's learned levels in the
# runs with faults (none of which is a level).
$(B)/shift_replay: lab/shift_replay.c gnmr.h
	@mkdir -p $(@D)
	$(firstword $(CC_LIST)) $(BENCH_FLAGS) -o $@ $< -lm
shift-replay: $(B)/shift_replay
	$(B)/shift_replay $(EFF)/lm-shift/core/trace.csv $(EFF_LM_SHIFT_UNIT) \
	  $$(( $(EFF_STEPS) * $(EFF_LM_SHIFT_PCT) / 100 ))
	$(B)/shift_replay $(EFF)/lm-shift-injected/core/trace.csv \
	  $(EFF_LM_SHIFT_UNIT) $$(( $(EFF_STEPS) * $(EFF_LM_SHIFT_PCT) / 100 ))
	$(B)/shift_replay $(EFF)/lm-injected/core/trace.csv 0 0

.PHONY: efficacy efficacy-quick $(EFF_PARTS) eff-mlp-freeze shift-replay \
        efficacy-shift-sweep eff-shift-a eff-shift-b

.PHONY: efficacy efficacy-quick $(EFF_PARTS) eff-lm-inj-place

# Placement: the format's own loss (bench/RESULTS.md, "Placement"). The
# placement arms (lab/arms.h, place-RULE-B) at 5/10/20% of the units'
# GEMM FLOPs beside f32+clip and lowp+clip, in build/efficacy-place:
#   lm-natural-clip      FP4 E2M1 per tensor, lr 4e-3, cosine (3 seeds)
#   lm-e5m2grad-clip     the same, and the units' output gradients in FP8
#                        E5M2 (per tensor, delayed scaling) (3 seeds)
#   lm-natural-clip-wsd  lm-natural-clip under WSD (seed 1): the late switch,
#                        told the schedule, against the measured rule
# 94 LM runs of 1000 steps: about an hour on 2 cores (40-50 s a run).
EFFP = $(B)/efficacy-place
EFF_LM_E5M2 = $(EFF_LM_NAT) --grad-format e5m2
EFFP_SPACE = place-nvfp4-10,place-nvfp4-20,place-firstlast-20,$\
  place-rand1-20,place-rand2-20,place-rand3-20,place-once-20
EFFP_TIME = place-late-5,place-late-10,place-late-20,place-nvfp4-late-10
EFFP_MEASURED = place-upd-max-10,place-upd-both-10,place-upd-all-10,$\
  place-upd-late-10,place-gnmr-10
EFFP_PARTS = effp-nat-space effp-nat-time effp-e5m2grad effp-wsd
effp-nat-space:
	$(EFF_LM_NAT) --setting lm-natural-clip --steps $(EFF_STEPS) \
	  --seeds $(EFF_SEEDS) --arms f32,lowp,$(EFFP_SPACE) \
	  --out $(EFFP)/lm-natural-clip/space
effp-nat-time:
	$(EFF_LM_NAT) --setting lm-natural-clip --steps $(EFF_STEPS) \
	  --seeds $(EFF_SEEDS) --arms $(EFFP_TIME),$(EFFP_MEASURED) \
	  --out $(EFFP)/lm-natural-clip/time
effp-e5m2grad:
	$(EFF_LM_E5M2) --setting lm-e5m2grad-clip --steps $(EFF_STEPS) \
	  --seeds $(EFF_SEEDS) --arms f32,lowp,place-nvfp4-20,$\
	place-late-10,place-nvfp4-late-10,$(EFFP_MEASURED) \
	  --out $(EFFP)/lm-e5m2grad-clip/all
effp-wsd:
	$(EFF_LM_NAT) --schedule wsd --setting lm-natural-clip-wsd \
	  --steps $(EFF_STEPS) --seeds 1 --arms f32,lowp,place-late-5,$\
	place-late-10,place-nvfp4-late-10,$(EFFP_MEASURED) \
	  --out $(EFFP)/lm-natural-clip-wsd/s1

eff-place: $(B)/train_lm $(B)/efficacy_report fortunes-check
	rm -rf $(EFFP)
	$(MAKE) --no-print-directory -j2 $(EFFP_PARTS)
	$(B)/efficacy_report $(EFFP)

.PHONY: eff-place $(EFFP_PARTS)

# The settings suite (lab/suite.c): 30 named settings that
# vary optimizer, schedule, warm-up, learning rate, model, format and
# events, each on f32, lowp, clip, gnmr and, where FP4 meets the LM, the
# placer and the told late switch, 3 seeds; split by the FNV-1a hash of the
# name into a tune half and a test half (`build/settings_suite list`).
# make suite: resumable (runs whose summary.csv exists are skipped), two
# runs at a time, one GEMM thread each; build/suite/{summary.csv,
# frontier.svg}. About 1.8 hours on 2 cores (bench/RESULTS.md, "Settings
# suite"). suite-quick, CI's lane: two settings (one of each half, the LM
# one in FP4 with the placement arms), 200 steps, one seed.
SUITE_DIR = $(B)/suite
SUITE_RUN = $(B)/settings_suite run
SUITE_QUICK = lm-e2m1-clip,mlp-e4m3-faults
SUITE_CSV_HEADER = setting,half,arm,seed,val_loss,hf_unit_steps,hf_flops,$\
  gap_recovered,val_loss_served,gap_recovered_served
$(B)/settings_suite: lab/suite.c lab/efficacy.c
	@mkdir -p $(@D)
	gcc $(CFLAGS_ALL) -o $@ $< -lm

suite: $(B)/settings_suite $(B)/train_lm $(B)/train_stress fortunes-check
	$(SUITE_RUN) $(SUITE_DIR) --bin $(B) --data $(FORTUNES)

suite-quick: $(B)/settings_suite $(B)/train_lm $(B)/train_stress \
             fortunes-check
	rm -rf $(SUITE_DIR)-quick
	$(SUITE_RUN) $(SUITE_DIR)-quick --bin $(B) --data $(FORTUNES) \
	  --only $(SUITE_QUICK) --steps 200 --seeds 1 --eval 64
	@head -1 $(SUITE_DIR)-quick/summary.csv | grep -qx '$(SUITE_CSV_HEADER)' && \
	  for r in lm-e2m1-clip,test,gnmr lm-e2m1-clip,test,place-plan-10 \
	    lm-e2m1-clip,test,place-planf-10 lm-e2m1-clip,test,place-late-10 \
	    mlp-e4m3-faults,tune,gnmr mlp-e4m3-faults,tune,gstab; do \
	    grep -q "^$$r,1," $(SUITE_DIR)-quick/summary.csv || exit 1; done && \
	  grep -Eq '^lm-e2m1-clip,test,place-late-10,1,[^,]+,[^,]+,0\.1000' \
	    $(SUITE_DIR)-quick/summary.csv && \
	  grep -q '<circle' $(SUITE_DIR)-quick/frontier.svg || \
	  { echo "suite-quick: summary.csv or frontier.svg incomplete"; exit 1; }
	@$(SUITE_RUN) $(SUITE_DIR)-quick --bin $(B) --data $(FORTUNES) \
	  --only $(SUITE_QUICK) --steps 200 --seeds 1 --eval 64 | \
	  grep -q '0 run(s) to do, 2 already' || \
	  { echo "suite-quick: a second run did not resume"; exit 1; }

.PHONY: suite suite-quick

# ---- detection benchmark ---------------------------------------------------
# Synthetic traces with ground truth and the real traces of bench/data/;
# the prototype's self-test first, then the tables: writes the
# "## Detection" section of bench/RESULTS.md in place (about 30 s).
DETECT_DATA = $(patsubst bench/data/%.csv.gz,$(B)/data/%.csv,\
                $(wildcard bench/data/*.csv.gz))
$(B)/data/%.csv: bench/data/%.csv.gz
	@mkdir -p $(@D)
	gunzip -c $< > $@
$(B)/detect: lab/detect/detect.c $(wildcard lab/detect/*.h) gnmr.h \
             tests/splitmix.h
	@mkdir -p $(@D)
	$(firstword $(CC_LIST)) $(BENCH_FLAGS) -o $@ $< -lm

detect: $(B)/detect $(DETECT_DATA)
	$(B)/detect --selftest
	$(B)/detect --data $(B)/data --md $(B)/detect.md
	@sh bench/splice_section.sh bench/RESULTS.md "## Detection" $(B)/detect.md
	@echo "detect: bench/RESULTS.md, section Detection, updated"

# Rise recall at 0.1% false alarms for the rule, variants of it and bounds
# given the synthetic traces' hidden truth (z_rise swept; 32 seeds, about
# 3 min on one core): the "## Detection frontier" section.
detect-frontier: $(B)/detect
	$(B)/detect --frontier 32 --md $(B)/frontier.md
	@sh bench/splice_section.sh bench/RESULTS.md "## Detection frontier" \
	  $(B)/frontier.md
	@echo "detect-frontier: bench/RESULTS.md, section Detection frontier, updated"


# ---- a closed loop at a size users train (lab/gpu_efficacy.py) -------------
# A 57M-parameter byte-level GPT (8 layers, d 768, ctx 256) on the fortunes,
# FP4 emulated on every Linear's GEMM inputs through the PyTorch bridge: f32,
# lowp, the placer for each way of serving, the told late switch and the
# controller with forward signals, each evaluated served and on the f32
# path. gpu-efficacy: on a GPU, GPU_EFF_STEPS steps of 16 x 256 bytes
# (estimated 4-5 min of an H100/H200 for the six arms; GPU_EFF_BUDGET
# seconds at most: the arms that would end past it are skipped, said in
# the table); build/gpu-efficacy/{log.txt,train.csv,results.csv,table.md}.
# gpu-efficacy-toy: the same code at a tiny size on the CPU (seconds).
# FORTUNES=DIR where the Debian package is not installed; gpu-efficacy-data
# copies its text (2.6 MB) to $(B)/fortunes, for a machine without it.
GPU_EFF_STEPS ?= 800
GPU_EFF_FMT ?= e2m1
GPU_EFF_BUDGET ?= 400
GPU_EFF_RUN = py=$$($(TORCH_PY)); test -n "$$py" || \
  { echo "gpu-efficacy: no Python imports torch"; exit 1; }; \
  $$py lab/gpu_efficacy.py --fmt $(GPU_EFF_FMT) --data $(FORTUNES)
gpu-efficacy: libgnmr fortunes-check
	@$(GPU_EFF_RUN) --device cuda --steps $(GPU_EFF_STEPS) \
	  --budget-s $(GPU_EFF_BUDGET) --out $(B)/gpu-efficacy
gpu-efficacy-toy: libgnmr fortunes-check
	@$(GPU_EFF_RUN) --toy --device cpu --out $(B)/gpu-efficacy-toy
gpu-efficacy-data: fortunes-check
	@mkdir -p $(B)/fortunes
	cp $$(find $(FORTUNES) -maxdepth 1 -type f ! -name '*.*') $(B)/fortunes/

.PHONY: gpu-efficacy gpu-efficacy-toy gpu-efficacy-data

# The FP4 width ladder (bench/RESULTS.md, "FP4 width ladder (2026-11-29)"):
# the LM demo at widths WIDTHS (head size 16: heads = width / 16) on the
# options of the suite's lm-e2m1-sgd and lm-e2m1-nowarm (lab/suite.c),
# nothing else changed, arms WIDTH_ARMS, seeds 1..WIDTH_SEEDS, 500 steps,
# 512 validation windows, one GEMM thread, two runs at a time;
# build/width/w<C>/<setting>/s<seed>/, efficacy_report over each width,
# then bench/width_fit.py over them all. Resumable: a run whose folder
# exists is skipped. About an hour on 2 shared cores at 32,64,96 x 3 seeds.
WIDTHS ?= 32 64 96
WIDTH_SEEDS ?= 3
WIDTH_DIR = $(B)/width
WIDTH_ARMS = f32,lowp,place-planf-10,place-planlowd-10
WIDTH_OPT_lm-e2m1-sgd = --format e2m1 --optimizer sgd --schedule cosine \
  --warmup 5% --lr 0.3
WIDTH_OPT_lm-e2m1-nowarm = --format e2m1 --optimizer adamw \
  --schedule cosine --warmup 0 --lr 2e-3
WIDTH_RUNS = $(foreach c,$(WIDTHS),$(foreach s,lm-e2m1-sgd lm-e2m1-nowarm,$\
  $(foreach k,$(shell seq $(WIDTH_SEEDS)),$(WIDTH_DIR)/w$(c)/$(s)/s$(k))))
$(WIDTH_DIR)/w%:
	@c=$$(echo $* | cut -d/ -f1); s=$$(echo $* | cut -d/ -f2); \
	k=$$(echo $* | cut -d/ -f3 | tr -d s); mkdir -p $(@D)/.tmp && \
	$(B)/train_lm --quiet --threads 1 --data $(FORTUNES) --setting $$s \
	  $(WIDTH_OPT_$(word 2,$(subst /, ,$*))) --dim $$c --heads $$((c / 16)) \
	  --seed $$k --seeds 1 --steps 500 --eval 512 --arms $(WIDTH_ARMS) \
	  --out $(@D)/.tmp/s$$k > $(@D)/.tmp/s$$k.log 2>&1 && \
	mv $(@D)/.tmp/s$$k $@
width-ladder: $(B)/train_lm $(B)/efficacy_report fortunes-check
	$(MAKE) --no-print-directory -j2 $(WIDTH_RUNS)
	for c in $(WIDTHS); do \
	  $(B)/efficacy_report $(WIDTH_DIR)/w$$c > /dev/null || exit 1; done
	python3 bench/width_fit.py $(foreach c,$(WIDTHS),$(WIDTH_DIR)/w$(c))

.PHONY: width-ladder
