"""What the GPU benchmarks' tables (paired_differences.py, forward_table.py, forward_checks.py,
softnic_stages.py) share: the name a kind's results are filed under, the name of a
doorbell_forward.sh run's results, and the median of paired differences with a distribution-free
confidence interval."""
import math
import re


def kind_tag(kind):
    """A kind's name as a file name: kinds.sh's kind_tag, the rule the benchmark scripts file under."""
    return re.sub("[:/=,]", "-", kind)


# A doorbell_forward.sh run's results: KINDTAG_bBURST_dDELAY_rREAD_REP.json (its log: .json.log).
FORWARD_RUN = re.compile(r"(.+)_b(\d+)_d(\d+)_r(\d+)_(\d+)\.json")


def median_ci(xs):
    """The median and the narrowest interval [x_(k), x_(n-k+1)] (1-based) that holds it with >= 95 %."""
    xs = sorted(xs)
    n = len(xs)
    med = xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    cover, k = 0.0, 0
    for j in range(1, n // 2 + 1):
        # P(x_(j) <= median < x_(n-j+1)) = 1 - 2 * P(Binomial(n, 1/2) < j)
        below = sum(math.comb(n, i) for i in range(j)) / 2 ** n
        if 1 - 2 * below >= 0.95:
            cover, k = 1 - 2 * below, j
    if not k:
        return med, None, None, 0.0
    return med, xs[k - 1], xs[n - k], cover


def paired_text(differences):
    """The median of paired differences and its 95 % interval as the tables print them:
    "+0.550 [+0.200, +0.900]", or "+0.500 (too few runs for 95 %)"."""
    med, lo, hi, _ = median_ci(differences)
    ci = f"[{lo:+.3f}, {hi:+.3f}]" if lo is not None else "(too few runs for 95 %)"
    return f"{med:+.3f} {ci}"
