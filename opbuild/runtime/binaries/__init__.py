"""Binary selection: which package holds an op (package search), its binary index, and the
selection of one binary by simplified key (GenSimplifiedKey -> full key -> lookup)."""
