"""Model implementations of verl-cpp (LibTorch decoders with Hugging Face names)."""
