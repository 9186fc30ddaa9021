"""Item text as vectors: the encoder choice, the backbones, the cached encode and its runtimes."""
