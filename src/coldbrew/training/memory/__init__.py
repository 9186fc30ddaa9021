"""Memory: what a step or a fit needs per device (``coldbrew memory``), and out-of-memory recovery."""
