"""pe_lib: position embeddings in BERT (Wang et al., ICLR 2021), one registered variant each.

>>> from pe_lib import PEBertConfig, PEBertForMaskedLM
>>> model = PEBertForMaskedLM(PEBertConfig(position_embedding="ape-sin-learned+rpe-learned"))
"""
from pe_lib.config import PEBertConfig
from pe_lib.hf_import import from_hf_bert
from pe_lib.model import PEBertForMaskedLM, PEBertForQuestionAnswering, PEBertForSequenceClassification, PEBertModel
from pe_lib.positions import PE_VARIANTS, all_variants, parse_variant

__all__ = [
    "PE_VARIANTS",
    "PEBertConfig",
    "PEBertForMaskedLM",
    "PEBertForQuestionAnswering",
    "PEBertForSequenceClassification",
    "PEBertModel",
    "all_variants",
    "from_hf_bert",
    "parse_variant",
]
