"""What the ranks of a launched run share (`world`): read by the trainer and by the evaluation runner."""
