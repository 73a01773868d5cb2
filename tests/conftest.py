import os

import pytest
import torch
from support import tiny_config

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture
def make_config():
    """Factory fixture: ``make_config(variant, **overrides)`` -> tiny PEBertConfig."""
    return tiny_config
