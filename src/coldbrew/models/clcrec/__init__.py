"""CLCRec: the model, its options, and the neighbor-graph contrastive term only it uses."""
