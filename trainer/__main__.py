"""`python -m trainer` (or `torchrun ... -m trainer`): run the trainer package directly."""

from trainer.main import main

main()
