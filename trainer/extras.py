"""`if EXTRAS:` marks code a person at a terminal or an unusual machine needs and a record run
does not: checks that repeat what `pgolf train` already checked, the live progress display,
friendlier messages for bad input, fallbacks the record's GPUs never take.

It is True in the package and in the full bundle. A record bundle (trainer.bundle, built with the
run's settings) reads it as False and leaves that code out, with whatever only it reached: the
shipped train_gpt.py is the same trainer, less what its run never executes.
"""

EXTRAS = True
