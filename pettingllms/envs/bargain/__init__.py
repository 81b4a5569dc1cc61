"""`bargain-v0`: a seller and a buyer negotiate a price (a general-sum game; `env` documents it)."""
