"""Math team: a reasoner and a tool agent (`math-v0`)."""
