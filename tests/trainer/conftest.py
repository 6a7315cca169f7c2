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
def caseops_data_dir(tmp_path_factory):
    """The sample corpus as CaseOps data: its own tokenizer, shards and the byte sidecar."""
    return make_caseops_data_dir(tmp_path_factory.mktemp("caseops"))
