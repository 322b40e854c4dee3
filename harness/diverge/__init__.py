"""Where a mismatching graph first goes wrong: traces of trusted runs and the first diverging node (harness diverge)."""

DEFAULT_BUDGET = 2000  # mismatches per matrix: the default matrix has about 1200 with a trusted judgement
