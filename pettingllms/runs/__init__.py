"""A run's folder on disk: `RunLayout` owns every path in it; `manifest` checks a checkpoint's integrity.

Training writes runs, evaluation reads them; both go through here, so neither knows the other's code."""
