import pytest
import torch

from trainer_support import make_caseops_data_dir, make_data_dir

# Tiny models run fastest on one thread, and it avoids thread-pool stalls on small shared machines.
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory):
    """The sample corpus as shards: 8 validation documents, the rest training."""
    return make_data_dir(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="session")
def small_data_dir(tmp_path_factory):
    """The same corpus with 4 validation documents (3,968 tokens: two TTT chunks of 2,048, LoRA
    TTT's two groups of two documents): every evaluation phase runs, on less than half the
    tokens, for the tests that run whole trainings."""
    return make_data_dir(tmp_path_factory.mktemp("small_data"), num_val_docs=4)


@pytest.fixture(scope="session")
def caseops_data_dir(tmp_path_factory):
    """The sample corpus as CaseOps data: its own tokenizer, shards and the byte sidecar."""
    return make_caseops_data_dir(tmp_path_factory.mktemp("caseops"))
