"""pe_lib: position embeddings in BERT (Wang et al., ICLR 2021), one registered variant each."""
