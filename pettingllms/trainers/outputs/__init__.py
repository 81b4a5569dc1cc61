"""What a run writes into its folder: `checkpoint` (save and load), `metrics_log` (metrics.jsonl), `learning_curve`
(learning_curve.png), `trackers` (transformers' tracker callbacks, `report_to`)."""
