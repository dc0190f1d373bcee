"""paired_boot.py: the paired bootstrap the bench scripts share (clip_order.py,
units_full.py): the mean over groups of each group's mean (one group: the
plain mean of paired differences), and its 95% interval, each of DRAWS draws
resampling every group's values with replacement on their own, from
random.Random(RNG_SEED), the 2.5th and 97.5th percentiles: the method of
lab/efficacy.c's ef_boot_groups (its own generator), for the scripts that
read run directories the efficacy report does not lay out."""
import random

DRAWS, RNG_SEED = 2000, 20261129


def boot(groups):
    """(mean, lo, hi); lo and hi NaN when a group has fewer than 2 values."""
    rng = random.Random(RNG_SEED)
    stat = sum(sum(g) / len(g) for g in groups) / len(groups)
    if any(len(g) < 2 for g in groups):
        return stat, float("nan"), float("nan")
    means = []
    for _ in range(DRAWS):
        t = 0.0
        for g in groups:
            t += sum(g[rng.randrange(len(g))] for _ in g) / len(g)
        means.append(t / len(groups))
    means.sort()
    return stat, means[int(0.025 * DRAWS)], means[int(0.975 * DRAWS) - 1]
