"""`pgolf sweep`: audit many submissions of a clone in parallel and tabulate the verdicts."""
