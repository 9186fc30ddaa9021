"""One loader module per dataset format: prepared cold-start splits, MovieLens, RecBole, CLCRec, stored, synthetic."""
