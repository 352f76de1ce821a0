"""Meta-evaluation: how well a judge's scores agree with human judgments.

``evaluation`` (human-judgment files → a run of the metric → per-item scores beside the
humans'), ``correlations`` (pure: Spearman, Kendall, Pearson at the summary and item level).
"""
